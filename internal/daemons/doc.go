// Package daemons runs daemons and timers: one goroutine per object and
// handler, started when the object appears or the operator starts, and
// stopped when the object is deleted, stops matching the handler's filters,
// or the operator exits (Kopf's chapters "Daemons" and "Timers";
// compat: daemons, timers).
//
// It exists apart from the reactor because a daemon's life is not a
// handling cycle: it outlasts many passes over its object, sees the object's
// latest state rather than one event's, patches the object on its own, and
// has a termination protocol of its own. The reactor only tells a Set, on
// each pass, which handlers match the object now, whether the object is
// being deleted, and when its essence changed; the Set answers whether the
// object must keep its finalizer, and wakes the object's worker when a
// daemon exits, so that the finalizer goes as soon as nothing needs it.
//
// Go cannot kill a goroutine, so stopping is cooperative, in Kopf's three
// stages (compat: daemons-stopping): the daemon's Stopped flag is set at once; its ctx is
// cancelled (with the stop reason as context.Cause) after its
// CancellationBackoff; and a daemon still running CancellationTimeout later
// is reported, left orphaned, and no longer holds its object. A daemon
// without a CancellationTimeout holds its object until it exits, checked
// every CancellationPolling. When the operator exits, such daemons get
// Background.ExitTimeout, then they are reported and Shutdown returns: an
// uncooperative daemon can leak its goroutine, but never hang the exit.
//
// Time comes from an injected clock, so the schedules, backoffs and stop
// stages are tested with a fake one, without sleeping.
package daemons
