package kopfgotest

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/patch"
)

// The unit helpers build the argument a handler receives from a body, as
// the operator builds it: Spec, Meta, Status, Name, Namespace, Labels and
// the rest are views into the body; Patch is empty, Memo is new, Logger
// discards (set c.Logger to see the handler's lines). Call the handler as a
// plain function, then read what it did: its result and error, and
// c.Patch.Map() for what it wrote into the patch (the operator applies it
// as a merge patch, with the result under status.<handler-id>).

func newObject(body map[string]any) kopfgo.Object {
	o := handlers.NewObject(body, resources.Resource{}, &patch.Patch{}, slog.New(slog.DiscardHandler))
	o.Memo = &kopfgo.Memo{}
	return o
}

// NewChange builds the argument of a create handler (Reason create, New the
// object's essence, Old absent); set Reason for resume or delete handlers.
func NewChange(body map[string]any) *kopfgo.Change {
	essence := diffbase.Default().Build(body, nil)
	return &kopfgo.Change{
		Object:  newObject(body),
		Attempt: kopfgo.Attempt{Started: time.Now()},
		Reason:  kopfgo.ReasonCreate,
		Diff:    diffbase.Compute(nil, essence),
		New:     essence,
	}
}

// NewUpdate builds the argument of an update handler for an object changed
// from old to new: Old and New are their essences, Diff the difference in
// Kopf's format, the object is new.
func NewUpdate(old, new map[string]any) *kopfgo.Change {
	storage := diffbase.Default()
	o, n := storage.Build(old, nil), storage.Build(new, nil)
	return &kopfgo.Change{
		Object:  newObject(new),
		Attempt: kopfgo.Attempt{Started: time.Now()},
		Reason:  kopfgo.ReasonUpdate,
		Diff:    diffbase.Compute(o, n),
		Old:     o,
		New:     n,
	}
}

// NewSpawn builds the argument of a daemon or timer, whose Sleep runs on clk
// (a k8s.io/utils/clock/testing fake clock steps it; nil: the real clock).
// Live returns the body. The control stops the daemon and keeps what it
// applied with ApplyPatch.
func NewSpawn(body map[string]any, clk clock.Clock) (*kopfgo.Spawn, *SpawnControl) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	ctl := &SpawnControl{stopper: handling.NewStopper(), applied: &patch.Patch{}}
	s := handlers.NewSpawn(newObject(body), kopfgo.Attempt{Started: time.Now()}, handlers.SpawnEnv{
		Stopper: ctl.stopper,
		Clock:   clk,
		Live:    func() (map[string]any, bool) { return body, true },
		Apply: func(ctx context.Context, p *patch.Patch) error {
			ctl.mu.Lock()
			defer ctl.mu.Unlock()
			ctl.applied.Merge(p)
			return nil
		},
	})
	return s, ctl
}

// SpawnControl drives a Spawn made by NewSpawn.
type SpawnControl struct {
	stopper *handling.Stopper
	mu      sync.Mutex
	applied *patch.Patch
}

// Stop asks the daemon to stop, as the operator's exit does (Stopped,
// Stopping and Sleep see it; the reason is kopfgo.ErrOperatorExiting).
func (c *SpawnControl) Stop() { c.stopper.Stop(kopfgo.ErrOperatorExiting) }

// Applied is what the daemon sent with ApplyPatch so far, merged; what it
// left in its Patch is in s.Patch.
func (c *SpawnControl) Applied() map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &patch.Patch{}
	out.Merge(c.applied)
	return out.Map()
}

// NewActivity builds the argument of a startup, cleanup or probe handler,
// with default settings and a new operator memo.
func NewActivity() *kopfgo.Activity {
	return &kopfgo.Activity{
		Attempt:  kopfgo.Attempt{Started: time.Now()},
		Logger:   slog.New(slog.DiscardHandler),
		Memo:     &kopfgo.Memo{},
		Settings: &kopfgo.Settings{},
	}
}
