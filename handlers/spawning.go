package handlers

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/patch"
)

// SpawnKind tells daemons from timers.
type SpawnKind int

const (
	// KindDaemon runs the function once per object, for as long as it likes
	// (compat: daemons-spawn).
	KindDaemon SpawnKind = iota + 1
	// KindTimer calls the function per object on a schedule (compat: timers-interval).
	KindTimer
)

func (k SpawnKind) String() string {
	switch k {
	case KindDaemon:
		return "Daemon"
	case KindTimer:
		return "Timer"
	}
	return fmt.Sprintf("SpawnKind(%d)", int(k))
}

// Spawning is a registered daemon or timer: a handler that accompanies each
// matching object in the background rather than reacting to its changes. It
// embeds Handler, so that the options and filters every handler kind shares
// (ID, Retries, Backoff, Timeout, Errors, Param, …) configure it unchanged;
// Handler.Fn and Handler.Reason are unused.
type Spawning struct {
	Handler
	Kind SpawnKind
	Fn   SpawnFunc

	// InitialDelay postpones the first invocation after the object appears or
	// the operator starts (compat: daemons-initial-delay,
	// timers-initial-delay); InitialDelayFunc, when set, computes it from the
	// object instead.
	InitialDelay     time.Duration
	InitialDelayFunc func(*Spawn) time.Duration

	// Daemons: how a daemon is stopped (compat: daemons-stopping). Stopping is
	// cooperative: the Stopped flag is set at once, the daemon's ctx is
	// cancelled after CancellationBackoff, and after CancellationTimeout more a
	// daemon still running is reported and abandoned. Without a timeout it is
	// checked every CancellationPolling (0: the settings' default) and keeps
	// its object from being deleted.
	CancellationBackoff time.Duration
	CancellationTimeout time.Duration
	CancellationPolling time.Duration

	// Timers: the schedule (compat: timers).
	Interval time.Duration
	Idle     time.Duration
	Sharp    bool
}

// Title names the handler in logs: "Daemon 'id'" or "Timer 'id'".
func (s *Spawning) Title() string { return Title(s.Kind.String(), s.ID) }

// Call invokes the function; a panic becomes a PanicError.
func (s *Spawning) Call(ctx context.Context, arg *Spawn) (any, error) {
	return protect(ctx, s.Fn, arg)
}

// SpawnFunc is a daemon or a timer. A non-nil result goes to
// status.<handler-id> after each invocation.
type SpawnFunc func(ctx context.Context, s *Spawn) (any, error)

// The reasons a daemon or timer is stopped, given by Spawn.StopReason and by
// context.Cause of its ctx. ErrOperatorExiting is also the cause of the ctx
// of any handler still running when the operator's exit cancels it.
var (
	ErrResourceDeleted = errors.New("stopped: the object is being deleted")
	ErrFiltersMismatch = errors.New("stopped: the object no longer matches the handler's filters")
	ErrOperatorExiting = errors.New("stopped: the operator is exiting")
	ErrOperatorPausing = errors.New("stopped: the operator is pausing")
)

// Stopper is the stop signal of one daemon or timer: set once, with a reason.
type Stopper struct {
	once   sync.Once
	ch     chan struct{}
	reason atomic.Pointer[error]
}

// NewStopper returns a stopper that is not set.
func NewStopper() *Stopper { return &Stopper{ch: make(chan struct{})} }

// Stop sets the signal; the first reason wins. It reports whether this call
// set it.
func (s *Stopper) Stop(reason error) bool { return s.StopWith(reason, nil) }

// StopWith is Stop that runs also after the reason is recorded and before
// Stopping is closed: a daemon's ctx cancelled there is seen cancelled by
// whoever sees the signal, and whoever sees the ctx cancelled sees the
// reason.
func (s *Stopper) StopWith(reason error, also func()) bool {
	set := false
	s.once.Do(func() {
		s.reason.Store(&reason)
		if also != nil {
			also()
		}
		close(s.ch)
		set = true
	})
	return set
}

// Stopping is closed once the signal is set.
func (s *Stopper) Stopping() <-chan struct{} { return s.ch }

// Stopped reports whether the signal is set.
func (s *Stopper) Stopped() bool { return s.reason.Load() != nil }

// Reason is why the signal was set; nil while it is not.
func (s *Stopper) Reason() error {
	if r := s.reason.Load(); r != nil {
		return *r
	}
	return nil
}

// Spawn is the argument of daemons and timers. Object is the object as it
// was when this invocation started; Live gives its latest state, which
// a long-running daemon should read instead (compat: daemons-live).
//
// A daemon is asked to stop when its object is being deleted, stops matching
// the filters, or the operator exits: Stopped turns true and Stopping is
// closed at once; ctx is cancelled with the same reason (context.Cause) after
// the daemon's CancellationBackoff. Go cannot kill a goroutine: a daemon must
// return when asked, or it is reported and abandoned after its
// CancellationTimeout (without one, its object stays undeleted).
type Spawn struct {
	Object
	Attempt

	stopper *Stopper
	clock   clock.Clock
	live    func() (map[string]any, bool)
	apply   func(ctx context.Context, p *patch.Patch) error
}

// SpawnEnv is what the daemons machinery gives a Spawn beyond the object.
type SpawnEnv struct {
	Stopper *Stopper
	Clock   clock.Clock
	// Live returns the object's latest body, false once it is gone.
	Live func() (map[string]any, bool)
	// Apply sends a patch to the object.
	Apply func(ctx context.Context, p *patch.Patch) error
}

// NewSpawn builds the argument of one invocation.
func NewSpawn(obj Object, att Attempt, env SpawnEnv) *Spawn {
	return &Spawn{Object: obj, Attempt: att, stopper: env.Stopper, clock: env.Clock, live: env.Live, apply: env.Apply}
}

// Stopped reports whether the daemon or timer has been asked to stop.
func (s *Spawn) Stopped() bool { return s.stopper.Stopped() }

// Stopping is closed when the daemon or timer is asked to stop.
func (s *Spawn) Stopping() <-chan struct{} { return s.stopper.Stopping() }

// StopReason is why it was asked to stop: ErrResourceDeleted,
// ErrFiltersMismatch or ErrOperatorExiting; nil while it runs.
func (s *Spawn) StopReason() error { return s.stopper.Reason() }

// Sleep waits for d and reports whether it slept the whole time: it returns
// false as soon as the daemon is asked to stop or ctx ends, so that
//
//	for c.Sleep(ctx, 10*time.Second) { … }
//
// runs every 10 seconds and exits promptly when stopped (Kopf's
// stopped.wait; compat: daemons-stopped).
func (s *Spawn) Sleep(ctx context.Context, d time.Duration) bool {
	if s.Stopped() || ctx.Err() != nil {
		return false
	}
	if d <= 0 {
		return true
	}
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return !s.Stopped()
	case <-s.stopper.Stopping():
		return false
	case <-ctx.Done():
		return false
	}
}

// Live returns the object as the watch last delivered it: Body, Spec,
// Labels… are fresh, the rest (Patch, Logger, Memo, Param) is this
// invocation's. Once the object is gone, it is Object.
func (s *Spawn) Live() Object {
	if s.live == nil {
		return s.Object
	}
	body, ok := s.live()
	if !ok {
		return s.Object
	}
	o := NewObject(body, s.Resource, s.Patch, s.Logger)
	o.Memo, o.Param = s.Memo, s.Param
	return o
}

// ApplyPatch sends what the daemon has written into Patch so far and clears
// it, for daemons that report progress while they run; whatever is in Patch
// when the daemon returns is sent anyway (compat: daemons-patch).
func (s *Spawn) ApplyPatch(ctx context.Context) error {
	if s.Patch == nil || s.Patch.IsEmpty() || s.apply == nil {
		return nil
	}
	if err := s.apply(ctx, s.Patch); err != nil {
		return err
	}
	*s.Patch = patch.Patch{}
	return nil
}

// SpawnRegistration is what the public API hands over for a daemon or timer.
type SpawnRegistration struct {
	Resource string
	Kind     SpawnKind
	Fn       SpawnFunc
	// Configure applies the options; an ID it sets is the explicit id.
	Configure func(*Spawning)
}

// AddSpawning validates and records a daemon or timer.
func (r *Registry) AddSpawning(reg SpawnRegistration) {
	s := &Spawning{Kind: reg.Kind, Fn: reg.Fn}
	if reg.Configure != nil {
		reg.Configure(s)
	}
	what, errs := s.validate(registration{
		call: fmt.Sprintf("%s(%q)", reg.Kind, reg.Resource), noun: "handler", fn: reg.Fn,
		resource: reg.Resource, scoped: true, check: s.check,
	})
	// A daemon and a timer of one object share one namespace of ids: their
	// results both go to status.<id>.
	if r.record("spawning", s.Selector, what, &s.Handler, errs) == nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.spawning = append(r.spawning, s)
	}
}

// check is what only daemons and timers can get wrong.
func (s *Spawning) check() []error {
	var errs []error
	add := func(bad bool, msg string) {
		if bad {
			errs = append(errs, errors.New(msg))
		}
	}
	add(s.InitialDelay < 0, "InitialDelay must not be negative")
	add(s.CancellationBackoff < 0 || s.CancellationTimeout < 0 || s.CancellationPolling < 0,
		"CancellationBackoff, CancellationTimeout and CancellationPolling must not be negative")
	add(s.Interval < 0 || s.Idle < 0, "Interval and Idle must not be negative")
	if s.Kind == KindTimer {
		add(s.Interval == 0 && s.Idle == 0, "a timer needs an Interval, an Idle time, or both; for a function that runs once per object, register a Daemon")
		add(s.Sharp && s.Interval == 0, "Sharp needs an Interval: it keeps the invocations on the interval's grid")
	}
	return errs
}

// Spawning returns the daemons and timers in registration order.
func (r *Registry) Spawning() []*Spawning {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Spawning(nil), r.spawning...)
}

// protect calls a handler function, turning a panic into a PanicError.
func protect[A any](ctx context.Context, fn func(context.Context, A) (any, error), arg A) (result any, err error) {
	defer func() {
		if v := recover(); v != nil {
			result, err = nil, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(ctx, arg)
}
