package handlers

import (
	"context"
	"errors"
	"time"

	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/patch"
)

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

	stopper stopSignal
	clock   clock.Clock
	live    func() (map[string]any, bool)
	apply   func(ctx context.Context, p *patch.Patch) error
}

// SpawnEnv is what the daemons machinery gives a Spawn beyond the object.
type SpawnEnv struct {
	Stopper stopSignal
	Clock   clock.Clock
	// Live returns the object's latest body, false once it is gone.
	Live func() (map[string]any, bool)
	// Apply sends a patch to the object.
	Apply func(ctx context.Context, p *patch.Patch) error
}

// stopSignal is what a Spawn reads of its daemon's stop signal (the
// daemons machinery's Stopper): unexported, as only the machinery sets it.
type stopSignal interface {
	Stopped() bool
	Stopping() <-chan struct{}
	Reason() error
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
