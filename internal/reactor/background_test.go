package reactor

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/persistence"
)

func (s *scenario) daemon(id string, fn handlers.SpawnFunc, opts ...func(*handling.Spawning)) {
	poking := func(ctx context.Context, sp *handlers.Spawn) (any, error) {
		defer s.poke() // what it changed is news
		return fn(ctx, sp)
	}
	s.reg.AddSpawning(handling.SpawnRegistration{Resource: "kopfexamples", Kind: handling.KindDaemon, Fn: poking,
		Configure: func(h *handling.Spawning) {
			h.ID = id
			for _, o := range opts {
				o(h)
			}
		}})
}

// markDeleted does what the API server does on DELETE of an object with
// finalizers; the fake API has no deletion timestamps of its own.
func (s *scenario) markDeleted(name string) {
	s.update(name, func(u *unstructured.Unstructured) {
		now := metav1.NewTime(s.clock.Now())
		u.SetDeletionTimestamp(&now)
	})
}

func (s *scenario) hasFinalizer(name string) bool {
	return causes.HasFinalizer(s.get(name).Object, config.DefaultFinalizer)
}

// (compat: daemons-spawn, daemons-finalizer, persistence-finalizer): a daemon
// puts the finalizer on its object; on deletion it is asked to stop with
// ErrResourceDeleted, and the finalizer stays until it has exited. Its exit
// wakes the object: no touch patch.
func TestDaemonHoldsItsObjectUntilItExits(t *testing.T) {
	s := newScenario(t)
	started := make(chan struct{}, 1)
	reasons := make(chan error, 1)
	release := make(chan struct{})
	s.daemon("monitor", func(ctx context.Context, c *handlers.Spawn) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		reasons <- context.Cause(ctx)
		<-release // a slow cleanup
		return nil, nil
	})
	s.start()
	s.waitWatching()
	s.create("kex1", map[string]any{"field": "value"})
	<-started
	s.until("the finalizer", func() bool { return s.hasFinalizer("kex1") })
	s.markDeleted("kex1")
	if got := <-reasons; got != handlers.ErrResourceDeleted {
		t.Errorf("context.Cause = %v, want ErrResourceDeleted", got)
	}
	if !s.hasFinalizer("kex1") {
		t.Fatal("the finalizer was removed while the daemon still runs")
	}
	close(release)
	s.until("the finalizer removed", func() bool { return !s.hasFinalizer("kex1") })
	u := s.get("kex1")
	if _, ok := annotation(u, "kopf.zalando.org/last-handled-configuration"); ok {
		t.Error("a diff-base was stored for a resource without changing handlers")
	}
	if _, ok := annotation(u, "kopf.zalando.org/touch-dummy"); ok {
		t.Error("the daemon's exit was signalled with a touch patch")
	}
	if strings.Contains(s.log.String(), "is processed") {
		t.Errorf("a handling cycle was logged for a resource without changing handlers:\n%s", s.log)
	}
}

// (compat: daemons-errors, daemons-finalizer): a daemon that returns is done for its object, whose
// finalizer then goes without any deletion; its result is in status.
func TestDaemonThatReturnsReleasesTheFinalizer(t *testing.T) {
	s := newScenario(t)
	var calls counter
	// The daemon returns once the finalizer is on: returned before the
	// pass that spawned it has planned, it would leave nothing that needs
	// a finalizer, and none would be added (about 1 run in 200 under
	// -race, on main as well: the daemon returns between the pass's Sync
	// and its Requires).
	finalized := make(chan struct{})
	s.daemon("once", func(ctx context.Context, c *handlers.Spawn) (any, error) {
		calls.inc(c.Name)
		select {
		case <-finalized:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return map[string]any{"finished": true}, nil
	})
	s.start()
	s.waitWatching()
	s.create("kex1", nil)
	s.until("the finalizer added", func() bool { return s.hasFinalizer("kex1") })
	close(finalized)
	s.until("the finalizer removed", func() bool {
		return strings.Contains(s.log.String(), "Removing the finalizer, as there are no handlers requiring it.")
	})
	s.until("no finalizer", func() bool { return !s.hasFinalizer("kex1") })
	if got := s.get("kex1").Object["status"]; got == nil || got.(map[string]any)["once"].(map[string]any)["finished"] != true {
		t.Errorf("status = %v, want once.finished", got)
	}
	s.update("kex1", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"more": "events"}) })
	s.until("the event processed", func() bool { return strings.Count(s.log.String(), "Daemon 'once' succeeded.") == 1 })
	if n := calls.get("kex1"); n != 1 {
		t.Errorf("the daemon ran %d times, want 1", n)
	}
}

// (compat: handlers-order): delete handlers run while the daemons stop, once; the finalizer
// goes when both are done, in the pass the daemon's exit wakes.
func TestDeleteHandlersRunOnceWhileDaemonsStop(t *testing.T) {
	s := newScenario(t)
	var deletes counter
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	s.on(causes.Delete, "delete_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		deletes.inc(c.Name)
		return nil, nil
	})
	s.daemon("monitor", func(ctx context.Context, c *handlers.Spawn) (any, error) {
		started <- struct{}{}
		<-c.Stopping()
		<-release
		return nil, nil
	})
	s.start()
	s.waitWatching()
	s.create("kex1", nil)
	<-started
	s.until("handled", func() bool {
		_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
		return ok && s.hasFinalizer("kex1")
	})
	s.markDeleted("kex1")
	s.until("the delete handler", func() bool { return deletes.get("kex1") == 1 })
	s.until("the deletion held", func() bool {
		return strings.Contains(s.log.String(), "Deletion is held until the daemons and timers have exited.")
	})
	if !s.hasFinalizer("kex1") {
		t.Fatal("the finalizer was removed while the daemon still runs")
	}
	close(release)
	s.until("the finalizer removed", func() bool { return !s.hasFinalizer("kex1") })
	if n := deletes.get("kex1"); n != 1 {
		t.Errorf("the delete handler ran %d times, want 1", n)
	}
}

// (compat: handlers-order): while daemons hold a deletion, the delete
// handlers' successes are on the object, not only in the operator's memory:
// an operator that dies before the daemons have exited does not run them
// again after its restart (the records are Kopf's, so Kopf taking over
// does not either). The release removes the object, records and all.
func TestDeleteHandlersSuccessIsPersistedWhileDaemonsStop(t *testing.T) {
	s := newScenario(t)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	s.on(causes.Delete, "delete_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		return nil, nil
	})
	s.daemon("monitor", func(ctx context.Context, c *handlers.Spawn) (any, error) {
		started <- struct{}{}
		<-c.Stopping()
		<-release
		return nil, nil
	})
	s.start()
	s.waitWatching()
	s.create("kex1", nil)
	<-started
	s.until("handled", func() bool {
		_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
		return ok && s.hasFinalizer("kex1")
	})
	s.markDeleted("kex1")
	s.until("the delete handler's success on the object", func() bool {
		rec, err := persistence.Default().Fetch("delete_fn", s.get("kex1").Object)
		return err == nil && rec != nil && rec.Success
	})
	if !s.hasFinalizer("kex1") {
		t.Fatal("the finalizer was removed while the daemon still runs")
	}
	if log := s.log.String(); !strings.Contains(log, "Deletion is held until the daemons and timers have exited.") ||
		!strings.Contains(log, "Deletion is processed: 1 succeeded; 0 failed.") {
		t.Errorf("Kopf's lines of a held deletion are missing:\n%s", log)
	}
	close(release)
	s.until("the finalizer removed", func() bool { return !s.hasFinalizer("kex1") })
}

// (compat: daemons-exit): Run returns once the daemons have exited or been abandoned, even
// when one ignores every signal: the exit timeout bounds the wait.
func TestRunReturnsDespiteAStubbornDaemon(t *testing.T) {
	s := newScenario(t)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	var once sync.Once
	s.daemon("stubborn", func(ctx context.Context, c *handlers.Spawn) (any, error) {
		once.Do(func() { started <- struct{}{} })
		<-release
		return nil, nil
	})
	s.start()
	s.waitWatching()
	s.create("kex1", nil)
	<-started
	s.cancel()
	s.cancel = nil
	defer close(release)
	// A failure detector in real time: the steps run far ahead of the
	// operator's goroutines on a loaded machine, and 600 of them (ten
	// minutes of fake time) once passed before Run could return.
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for steps := 0; ; {
		select {
		case err := <-s.done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
			if !strings.Contains(s.log.String(), "Daemon 'stubborn' did not exit in time. Leaving it orphaned.") {
				t.Errorf("the abandonment is not logged:\n%s", s.log)
			}
			if steps < 5 {
				t.Errorf("Run returned after %d fake seconds, before the 5s exit timeout", steps)
			}
			return
		case <-deadline.C:
			t.Fatalf("Run did not return (%d fake seconds stepped; the exit timeout is 5 s)", steps)
		default:
		}
		// Step only while some timer is pending, and yield between steps,
		// so that the operator's goroutines set theirs.
		if s.clock.HasWaiters() {
			s.clock.Step(time.Second)
			steps++
		}
		runtime.Gosched()
	}
}
