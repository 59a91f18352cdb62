package kopfgo

import (
	"time"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
)

// Spawn is the argument of daemons and timers: the object (Object is as it
// was when the invocation started; Live() is its latest state), the attempt
// (Retry, Started, Runtime), and the stop signal: Stopped, Stopping,
// StopReason and Sleep, which returns early when the daemon is asked to
// stop. See Daemon for the stopping protocol.
type Spawn = handlers.Spawn

// SpawnFunc is a daemon or a timer. A non-nil result goes to
// status.<handler-id> after each invocation, and whatever the function wrote
// into Patch is applied then, even when it returns an error (compat: daemons-results,
// daemons-patch).
type SpawnFunc = handlers.SpawnFunc

// The reasons a daemon or timer is stopped: Spawn.StopReason, and
// context.Cause of its ctx once cancelled.
var (
	// ErrResourceDeleted: the object is being deleted (or is gone).
	ErrResourceDeleted = handlers.ErrResourceDeleted
	// ErrFiltersMismatch: the object no longer matches the handler's
	// filters; the daemon is spawned again when it matches again.
	ErrFiltersMismatch = handlers.ErrFiltersMismatch
	// ErrOperatorExiting: the operator is stopping; the daemon is spawned
	// again when the operator starts again. It is also context.Cause of the
	// ctx of a changing handler still running when the operator's exit
	// cancels it (after Settings.Queueing.ExitTimeout).
	ErrOperatorExiting = handlers.ErrOperatorExiting
	// ErrOperatorPausing: the operator stands by (a peer of higher
	// priority, a freeze, a Lease held by another replica); the daemon is
	// spawned again when the operator resumes.
	ErrOperatorPausing = handlers.ErrOperatorPausing
)

// SpawnOption configures a daemon or a timer: the options of every
// retried handler (ID, Retries, Backoff, Timeout, Errors, Param), the
// filters (the daemon or timer runs while its object matches and stops
// with ErrFiltersMismatch when it does not; compat: daemons-filters,
// timers-filters), InitialDelay, and the options of one of the two kinds:
// CancellationBackoff, CancellationTimeout and CancellationPolling for
// daemons, Interval, Idle and Sharp for timers. An option of the other kind
// is a registration error naming the handler.
type SpawnOption interface{ applySpawn(*handling.Spawning) }

type spawnOption func(*handling.Spawning)

func (o spawnOption) applySpawn(s *handling.Spawning) { o(s) }

// InitialDelay postpones the first invocation of a daemon or timer by d after
// the object appears or the operator starts (compat: daemons-initial-delay,
// timers-initial-delay). A stop during the delay ends it without an invocation.
func InitialDelay(d time.Duration) SpawnOption {
	return spawnOption(func(s *handling.Spawning) { s.InitialDelay = d })
}

// InitialDelayFunc is InitialDelay computed from the object when the daemon
// or timer starts, e.g. a random delay to spread the load of a restart.
func InitialDelayFunc(fn func(s *Spawn) time.Duration) SpawnOption {
	return spawnOption(func(s *handling.Spawning) { s.InitialDelayFunc = fn })
}

// CancellationBackoff is how long a stopping daemon has with only its Stopped
// flag set before its ctx is cancelled: time for a graceful exit with a live
// ctx (compat: daemons-stopping). Default: none, the ctx is cancelled at once.
// It fits daemons only.
func CancellationBackoff(d time.Duration) SpawnOption {
	return spawnOption(func(s *handling.Spawning) { s.CancellationBackoff = d })
}

// CancellationTimeout is how long a daemon may go on after its ctx is
// cancelled. A daemon still running then is reported (a warning naming it
// and its object) and abandoned: its object is released and the operator's
// exit does not wait for it, but its goroutine runs on, since Go cannot kill
// it. Default: none, the daemon holds its object until it exits. It fits
// daemons only.
func CancellationTimeout(d time.Duration) SpawnOption {
	return spawnOption(func(s *handling.Spawning) { s.CancellationTimeout = d })
}

// CancellationPolling is how often a stopping daemon without a
// CancellationTimeout is checked (and logged at DEBUG). Default:
// Settings.Background.CancellationPolling, 60s. It fits daemons only.
func CancellationPolling(d time.Duration) SpawnOption {
	return spawnOption(func(s *handling.Spawning) { s.CancellationPolling = d })
}

// Interval is the time between a timer's invocations: from the end of one to
// the start of the next, or, with Sharp, from start to start (compat:
// timers-interval). It fits timers only.
func Interval(d time.Duration) SpawnOption {
	return spawnOption(func(s *handling.Spawning) { s.Interval = d })
}

// Idle makes a timer fire only once its object has not changed for d (spec,
// labels or annotations; status writes, the timer's own results included,
// do not count). The first sighting of an object counts as a change
// (compat: timers-idle). It fits timers only.
func Idle(d time.Duration) SpawnOption {
	return spawnOption(func(s *handling.Spawning) { s.Idle = d })
}

// Sharp keeps a timer on a fixed grid of its Interval, measured from each
// invocation's start, however long the invocations take (compat:
// timers-sharp). It fits timers only.
func Sharp() SpawnOption {
	return spawnOption(func(s *handling.Spawning) { s.Sharp = true })
}

// Daemon registers a daemon: fn runs in a goroutine of its own for each
// matching object, started when the object appears (or the operator starts),
// and is expected to run until it is asked to stop: when the object is being
// deleted, no longer matches the filters, or the operator exits (compat: daemons-spawn).
//
// Stopping is cooperative, because Go cannot kill a goroutine. Spawn's
// Stopped turns true and Stopping is closed at once; ctx is cancelled, with
// the reason as context.Cause (ErrResourceDeleted, ErrFiltersMismatch,
// ErrOperatorExiting), after CancellationBackoff; a daemon still running
// CancellationTimeout later is reported and abandoned. Until a daemon has
// exited (or been abandoned), the operator's finalizer keeps its object from
// being deleted.
//
// A daemon that returns is done for this object until the operator
// restarts; to be called again, return kopfgo.Temporary(err, delay). Errors
// are handled as for any handler: retried after the Backoff, or not, per the
// Errors mode, Retries and Timeout (compat: daemons-errors).
func (r Registrar) Daemon(resource string, fn SpawnFunc, opts ...SpawnOption) {
	r.spawn(handling.KindDaemon, resource, fn, nil, opts)
}

// Timer registers a timer: fn is called for each matching object on a
// schedule (Interval, Idle, Sharp, InitialDelay), whether the object changes
// or not, and never overlaps itself (compat: timers). An error overrides the
// schedule: the next attempt comes after the error's delay or the Backoff,
// and the interval resumes after a success, with Retry counted afresh; a
// permanent error stops the timer for this object until the operator
// restarts. Timers hold the finalizer as daemons do, and are stopped the
// same way (without CancellationBackoff or CancellationTimeout).
func (r Registrar) Timer(resource string, fn SpawnFunc, opts ...SpawnOption) {
	r.spawn(handling.KindTimer, resource, fn, nil, opts)
}

// spawn registers a daemon or a timer; named is the user's function when fn
// adapts it (typed daemons and timers).
func (r Registrar) spawn(kind handling.SpawnKind, resource string, fn SpawnFunc, named any, opts []SpawnOption) {
	r.op.reg.AddSpawning(handling.SpawnRegistration{Resource: resource, Kind: kind, Fn: fn, Named: named,
		Configure: func(s *handling.Spawning) {
			for _, o := range opts {
				o.applySpawn(s)
			}
		}})
}
