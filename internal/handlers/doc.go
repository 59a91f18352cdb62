// Package handlers is what a handler sees: the typed argument structs
// handlers receive instead of Kopf's kwargs (Change, Object, Attempt, Spawn,
// WatchEvent, Admission, Activity), the function types of each kind, the
// per-object Memo, the errors a handler returns or is stopped with
// (TemporaryError, PermanentError, ErrOperatorExiting, …) and the errors
// modes.
//
// It exports nothing else on purpose: how handlers are registered, selected,
// matched against filters and run with Kopf's semantics (retries, backoffs,
// timeouts, errors modes, sub-handlers, panics turned into errors) is the
// engine's business, in internal/handling, so that this package can be read
// in one sitting and only grows when handlers get something new. It is
// internal, as the rest of the engine is: kopfgo re-exports every type here
// a user meets under the same name (type Change = handlers.Change, …), so
// that users import kopfgo alone and no public package is imported by
// internal/ for them; package handlers, the public import path users were
// promised, re-exports this package too.
//
// NewObject and NewSpawn build handler arguments outside a running operator
// (the daemons machinery and the test kit kopfgotest use them): Spawn keeps
// its link to the machinery (its stop signal, clock and patching) in
// unexported fields, so only this package can build one.
package handlers
