package config

import "time"

// Background tunes how daemons and timers are stopped (Kopf's
// settings.background; compat: settings-background). A daemon cannot be killed
// in Go: these settings bound how long the operator waits for daemons that do
// not exit when asked, never force them.
type Background struct {
	// CancellationPolling is how often a daemon without a CancellationTimeout
	// (and every timer) is checked, and logged, while it keeps running after
	// being asked to stop; the object keeps its finalizer meanwhile.
	// Default 60s; a daemon's own CancellationPolling overrides it.
	CancellationPolling time.Duration
	// InstantExitTimeout is how long a processing pass waits for daemons it
	// has just asked to stop, so that a daemon exiting promptly releases its
	// object in the same pass. Default 0: only a few scheduler yields
	// (InstantExitZeroTimeCycles); the exit wakes the object again anyway.
	InstantExitTimeout time.Duration
	// InstantExitZeroTimeCycles is how many times a pass yields the
	// processor to stopping daemons when InstantExitTimeout is 0. Default
	// 10; negative disables the yields.
	InstantExitZeroTimeCycles int
	// ExitTimeout is how long the operator's shutdown waits for daemons and
	// timers that have no CancellationTimeout of their own, after their
	// CancellationBackoff (compat: daemons-exit). Those still running then are
	// reported and left orphaned, and Run returns. Default 5s.
	ExitTimeout time.Duration
}

func (b Background) withDefaults() Background {
	if b.CancellationPolling == 0 {
		b.CancellationPolling = 60 * time.Second
	}
	if b.InstantExitZeroTimeCycles == 0 {
		b.InstantExitZeroTimeCycles = 10
	}
	if b.ExitTimeout == 0 {
		b.ExitTimeout = 5 * time.Second
	}
	return b
}
