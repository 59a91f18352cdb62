//go:build e2e

package e2e

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo"
)

// (compat: daemons-filters, timers-filters) with the filters of issue 4: a daemon runs only while its
// object matches; a mismatch stops it with ErrFiltersMismatch, a new match
// starts it again; a timer ticks only while its object matches.
func TestDaemonsAndTimersFollowTheirFilters(t *testing.T) {
	ns := namespace(t)
	var starts, running, ticks atomic.Int32
	var cu caughtUp
	stops := make(chan error, 10)
	log := embedded(t, ns, func(op *kopfgo.Operator) {
		cu.register(op)
		op.On.Daemon("kopfexamples", func(ctx context.Context, s *kopfgo.Spawn) (any, error) {
			starts.Add(1)
			running.Add(1)
			defer running.Add(-1)
			<-ctx.Done()
			stops <- context.Cause(ctx)
			return nil, nil
		}, kopfgo.ID("watcher"), kopfgo.Labels{"run": "yes"})
		op.On.Timer("kopfexamples", func(ctx context.Context, s *kopfgo.Spawn) (any, error) {
			ticks.Add(1)
			return nil, nil
		}, kopfgo.ID("ticker"), kopfgo.Interval(500*time.Millisecond), kopfgo.Annotations{"tick": kopfgo.Present})
	})
	obj := objYAML(t)
	obj["metadata"].(map[string]any)["labels"] = map[string]any{"run": "no"}
	created := createKex(t, ns, obj)
	name := created.GetName()
	// Once the operator has handled the creation, a daemon or timer it
	// spawned would also have made it put its finalizer on the object.
	cu.wait(t, ns, name)
	if fin := getKex(t, ns, name).GetFinalizers(); len(fin) != 0 {
		t.Errorf("finalizers = %v on an object no daemon or timer matches", fin)
	}
	if n := starts.Load(); n != 0 {
		t.Fatalf("the daemon started %d times on an object its filter excludes", n)
	}
	if n := ticks.Load(); n != 0 {
		t.Fatalf("the timer ticked %d times on an object its filter excludes", n)
	}

	patchKex(t, ns, name, `{"metadata":{"labels":{"run":"yes"},"annotations":{"tick":"1"}}}`)
	eventually(t, waitShort, "the daemon started", func() (bool, error) { return starts.Load() == 1, nil })
	eventually(t, waitShort, "the timer ticking", func() (bool, error) { return ticks.Load() >= 2, nil })

	patchKex(t, ns, name, `{"metadata":{"labels":{"run":"no"},"annotations":{"tick":null}}}`)
	select {
	case cause := <-stops:
		if !errors.Is(cause, kopfgo.ErrFiltersMismatch) {
			t.Errorf("the daemon's stop cause = %v, want ErrFiltersMismatch", cause)
		}
	case <-time.After(waitShort):
		t.Fatal("the daemon was not stopped when its filter stopped matching")
	}
	eventually(t, waitShort, "the daemon gone", func() (bool, error) { return running.Load() == 0, nil })
	// The timer's goroutine has ended (a tick under way has landed); once
	// the operator has handled every change since, nothing needs the
	// finalizer: a timer spawned again would.
	log.WaitFor(t, "["+ns+"/"+name+"] Timer 'ticker' has exited on request", 1)
	before := ticks.Load()
	cu.wait(t, ns, name)
	if fin := getKex(t, ns, name).GetFinalizers(); len(fin) != 0 {
		t.Errorf("finalizers = %v after the daemon's and the timer's filters stopped matching", fin)
	}
	if after := ticks.Load(); after != before {
		t.Errorf("the timer kept ticking (%d → %d) after its filter stopped matching", before, after)
	}

	patchKex(t, ns, name, `{"metadata":{"labels":{"run":"yes"}}}`)
	eventually(t, waitShort, "the daemon started again", func() (bool, error) { return starts.Load() == 2, nil })
}
