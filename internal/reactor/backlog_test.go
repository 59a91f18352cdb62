package reactor

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/handlers"
)

// faults make the fake API answer requests of a verb on KopfExamples
// with an error while left is above zero, counting them.
type faults struct{ left, failed atomic.Int32 }

func (s *scenario) failing(verb string, n int32, err error) *faults {
	f := &faults{}
	f.left.Store(n)
	s.dyn.PrependReactor(verb, "kopfexamples", func(clienttesting.Action) (bool, k8sruntime.Object, error) {
		if f.left.Add(-1) < 0 {
			f.left.Store(0)
			return false, nil, nil
		}
		f.failed.Add(1)
		return true, nil, err
	})
	return f
}

// stepUntil steps the clock by d whenever a worker waits for its timer,
// until the log has the line.
func (s *scenario) stepUntil(d time.Duration, line string) {
	s.t.Helper()
	for !strings.Contains(s.log.String(), line) {
		waits := s.waits.Load()
		s.clock.Step(d)
		s.until(fmt.Sprintf("%q, or a worker waiting again", line), func() bool {
			return strings.Contains(s.log.String(), line) || s.waits.Load() > waits
		})
	}
}

var kexGR = schema.GroupResource{Group: "kopf.dev", Resource: "kopfexamples"}

// A handler that has finished is not run again when the patch recording
// its outcome fails (here with a conflict that has nothing to do with the
// object's essence, which the API client does not retry): the patch is
// kept and written again, and only then is the object handled further.
func TestFailedWriteKeepsTheOutcomeInsteadOfRunningTheHandlerAgain(t *testing.T) {
	s := newScenario(t)
	failed := s.failing("patch", 1, apierrors.NewConflict(kexGR, "kex1", fmt.Errorf("the object has been modified")))
	var calls counter
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		calls.inc(c.Name)
		return map[string]any{"message": "hello"}, nil
	})
	s.create("kex1", map[string]any{"field": "value"})
	s.start()
	s.until("the write failed", func() bool { return strings.Contains(s.log.String(), "Throttling for 1 seconds") })
	s.stepUntil(time.Second, "Writing the outcome of the last pass again")
	s.until("handled in the API", func() bool {
		u := s.get("kex1")
		_, ok := annotation(u, "kopf.zalando.org/last-handled-configuration")
		return ok && u.Object["status"] != nil
	})
	s.until("its own patch seen as no change", func() bool { return strings.Contains(s.log.String(), "we are not interested") })
	if n := calls.get("kex1"); n != 1 {
		t.Errorf("handler called %d times, want 1", n)
	}
	if n := failed.failed.Load(); n != 1 {
		t.Errorf("%d patches failed, want 1", n)
	}
	if msg, _, _ := unstructured.NestedString(s.get("kex1").Object, "status", "create_fn", "message"); msg != "hello" {
		t.Errorf("status.create_fn.message = %q, want the handler's result", msg)
	}
}

// When the watch lags behind the operator's own patch and the re-read of
// the object fails too, the pass waits and re-reads again: going on with
// the cached state, which predates the patch, would run the handler again.
func TestFailedRereadWaitsInsteadOfRunningTheHandlerAgain(t *testing.T) {
	s := newScenario(t)
	s.statusSubresource = true // the status patch comes first, and through: it wakes the worker
	s.settings.Watching.InactivityTimeout = 24 * time.Hour
	s.withholdHandled()
	// Armed once the object is handled: the test reads it with GETs too.
	failed := s.failing("get", 0, apierrors.NewForbidden(kexGR, "kex1", fmt.Errorf("not now")))
	var calls counter
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		calls.inc(c.Name)
		return map[string]any{"message": "hello"}, nil
	})
	s.create("kex1", map[string]any{"field": "value"})
	s.start()
	s.until("handled in the API", func() bool {
		_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
		return ok
	})
	failed.left.Store(1)
	timeout := s.settings.WithDefaults().Persistence.ConsistencyTimeout
	s.stepUntil(timeout+time.Second, "Cannot re-read the object; trying again in 1 seconds")
	s.stepUntil(time.Second, "we are not interested")
	if n := calls.get("kex1"); n != 1 {
		t.Errorf("handler called %d times, want 1", n)
	}
	if n := failed.failed.Load(); n != 1 {
		t.Errorf("%d re-reads failed, want 1", n)
	}
}

// waitingHooks records the reactor's count of objects waiting for a pass,
// and counts the watch events it observes.
type waitingHooks struct {
	nopHooks
	mu      sync.Mutex
	waiting func() int
	events  atomic.Int32
	news    func() // told of each watch event
}

func (h *waitingHooks) WatchEvent(string, string) {
	h.events.Add(1)
	if h.news != nil {
		h.news()
	}
}

func (h *waitingHooks) Waiting(f func() int) {
	h.mu.Lock()
	h.waiting = f
	h.mu.Unlock()
}

func (h *waitingHooks) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiting == nil {
		return 0
	}
	return h.waiting()
}

// With thousands of objects to handle at once, at most MaxWorkers passes
// run at a time; the others wait as entries of one queue, without a
// goroutine each, and are handled in turn, each once.
func TestPassesAreBoundedAndWaitingObjectsHoldNoGoroutine(t *testing.T) {
	// Ten times the workers: most objects wait in the queue.
	const objects, limit = 30, 3
	s := newScenario(t)
	hooks := &waitingHooks{}
	s.hooks = hooks
	s.settings.Execution.MaxWorkers = limit
	release := &latch{ch: make(chan struct{})}
	var (
		mu      sync.Mutex
		running int
		most    int
		calls   counter
	)
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		calls.inc(c.Name)
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		s.poke()
		release.wait()
		mu.Lock()
		running--
		mu.Unlock()
		return nil, nil
	})
	s.createN(objects)
	s.start()
	t.Cleanup(release.open) // before the scenario's stop, which waits for the handlers
	defer s.pokeOften()()
	s.until("the limit reached and the rest waiting", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return running == limit && hooks.count() == objects-limit
	})
	if n := workerGoroutines(); n != limit {
		t.Errorf("%d workers have a goroutine with %d objects waiting, want %d (the passes in flight)", n, objects-limit, limit)
	}
	release.open()
	s.until("all handled", func() bool {
		return s.log.Count("Creation is processed: 1 succeeded; 0 failed.") == objects
	})
	mu.Lock()
	defer mu.Unlock()
	if most != limit {
		t.Errorf("at most %d handlers ran at once, want %d", most, limit)
	}
	for i := range objects {
		if n := calls.get(fmt.Sprintf("kex%03d", i)); n != 1 {
			t.Errorf("kex%03d: handler called %d times, want 1", i, n)
		}
	}
	s.until("nothing waiting", func() bool { return hooks.count() == 0 })
}

// pokeOften makes the scenario look again every few milliseconds, until
// the returned function is called: observations that only queue an object
// are no news to it.
func (s *scenario) pokeOften() (stop func()) {
	tick := time.NewTicker(5 * time.Millisecond)
	done := make(chan struct{})
	var ticking sync.WaitGroup
	ticking.Go(func() {
		for {
			select {
			case <-tick.C:
				s.poke()
			case <-done:
				return
			}
		}
	})
	return func() {
		tick.Stop()
		close(done)
		ticking.Wait()
	}
}

// An object that has news by the end of its pass (as the echo of its own
// patch comes during it, in a burst of creations) and finds every slot
// taken waits for its next pass in the queue without its goroutine too.
func TestObjectsWaitingForASecondPassHoldNoGoroutine(t *testing.T) {
	const objects = 6
	s := newScenario(t)
	hooks := &waitingHooks{}
	s.hooks = hooks
	s.settings.Execution.MaxWorkers = 1
	release := &latch{ch: make(chan struct{})}
	var (
		calls   counter
		first   atomic.Bool
		blocked atomic.Bool
	)
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		calls.inc(c.Name)
		if !first.Swap(true) {
			// News during the pass: two changes, the second's event proving
			// the first observed (the informer hands events over in order),
			// once the listing is over and nothing else moves.
			s.until("every object listed", func() bool { return hooks.events.Load() >= objects })
			seen := hooks.events.Load()
			for i := range 2 {
				s.update(c.Name, func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"change": fmt.Sprint(i)}) })
			}
			s.until("both changes observed", func() bool { return hooks.events.Load() >= seen+2 })
			return nil, nil
		}
		blocked.Store(true)
		s.poke()
		release.wait()
		return nil, nil
	})
	s.createN(objects)
	s.start()
	t.Cleanup(release.open) // before the scenario's stop, which waits for the handlers
	defer s.pokeOften()()
	// The first object has passed and waits for another pass behind the
	// objects never passed; the second holds the only slot.
	s.until("the slot taken and every other object waiting", func() bool {
		return blocked.Load() && hooks.count() == objects-1
	})
	if n := workerGoroutines(); n != 1 {
		t.Errorf("%d workers have a goroutine with %d objects waiting, want 1 (the pass in flight)", n, objects-1)
	}
	release.open()
	s.until("all handled", func() bool {
		return s.log.Count("Creation is processed: 1 succeeded; 0 failed.") == objects
	})
	for i := range objects {
		if n := calls.get(fmt.Sprintf("kex%03d", i)); n != 1 {
			t.Errorf("kex%03d: handler called %d times, want 1", i, n)
		}
	}
	s.until("nothing waiting", func() bool { return hooks.count() == 0 })
}

// latch holds handlers until it is opened.
type latch struct {
	ch   chan struct{}
	once sync.Once
}

func (l *latch) wait() { <-l.ch }
func (l *latch) open() { l.once.Do(func() { close(l.ch) }) }

// createN creates objects kex000, kex001, … with no spec.
func (s *scenario) createN(n int) {
	for i := range n {
		s.create(fmt.Sprintf("kex%03d", i), nil)
	}
}

// workerGoroutines counts the goroutines of object workers.
func workerGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "reactor.(*watcher).work(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// A resource's passes per second are capped: with one a second and no
// burst, the second object waits for the clock.
func TestResourceRateCapsPassesPerSecond(t *testing.T) {
	s := newScenario(t)
	s.settings.Queueing.ResourceRate = 1
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil })
	s.create("kex1", nil)
	s.create("kex2", nil)
	s.create("kex3", nil)
	waits := s.waits.Load()
	s.start()
	s.until("one handled and the others waiting for the rate", func() bool {
		return s.log.Count("Creation is processed") == 1 && s.waits.Load() > waits
	})
	if n := s.log.Count("Creation is processed"); n != 1 {
		t.Fatalf("%d creations processed before the clock moved, want 1", n)
	}
	for s.log.Count("Creation is processed") < 3 {
		waits := s.waits.Load()
		s.clock.Step(time.Second)
		s.until("a worker waiting again, or all handled", func() bool {
			return s.waits.Load() > waits || s.log.Count("Creation is processed") == 3
		})
	}
}

// passHooks count the passes that have ended, beside what waitingHooks
// record.
type passHooks struct {
	waitingHooks
	passes atomic.Int32
}

func (h *passHooks) Busy(delta int) {
	if delta < 0 {
		h.passes.Add(1)
		if h.news != nil {
			h.news()
		}
	}
}

// With an interval between one object's passes, news that comes sooner
// waits for the rest of it and is handled in one pass, of the latest state.
// The clock stands still until the test steps it, so nothing but the
// interval can hold the second pass back.
func TestObjectIntervalCoalescesNewsIntoOnePass(t *testing.T) {
	s := newScenario(t)
	s.settings.Queueing.ObjectInterval = 10 * time.Second
	hooks := &passHooks{waitingHooks: waitingHooks{news: s.poke}}
	s.hooks = hooks
	// Handled before the start: its first pass, of the listing, is a noop
	// that needs no clock, and starts the interval.
	updates, saw := s.handledWithUpdates("x")
	s.start()
	s.until("the listing's pass over", func() bool { return hooks.passes.Load() >= 1 })
	s.waitWatching()
	events := hooks.events.Load()
	for _, v := range []string{"a", "b"} {
		s.update("kex1", func(u *unstructured.Unstructured) { u.Object["spec"] = map[string]any{"field": v} })
	}
	// Each update is a watch event; once the last is observed, the
	// informer's store has b.
	s.until("the updates observed", func() bool { return hooks.events.Load() >= events+2 })
	if n := updates.get("kex1"); n != 0 {
		t.Fatalf("update handler ran %d times before the interval passed", n)
	}
	s.stepUntil(10*time.Second, "Updating is processed")
	if n := updates.get("kex1"); n != 1 || saw.Load() != "b" {
		t.Errorf("update handler ran %d times and saw %v, want once with the latest spec (b)", n, saw.Load())
	}
}

// handledWithUpdates registers an update handler that counts its calls
// and keeps the spec's field it saw last, and creates kex1 with field,
// recorded as handled: the pass of its listing is a noop.
func (s *scenario) handledWithUpdates(field string) (updates *counter, saw *atomic.Value) {
	updates, saw = &counter{}, &atomic.Value{}
	s.on(causes.Update, "update_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		saw.Store(fmt.Sprint(c.Spec["field"])) // before the count, which tests wait for
		updates.inc(c.Name)
		return nil, nil
	})
	s.create("kex1", map[string]any{"field": field})
	s.update("kex1", func(u *unstructured.Unstructured) {
		u.SetAnnotations(map[string]string{"kopf.zalando.org/last-handled-configuration": `{"spec":{"field":"` + field + `"}}` + "\n"})
	})
	return updates, saw
}

// seenHooks tell, of the latest pass to have ended, how many watch events
// had been observed when it started: once that is n, the pass has handled
// everything the first n events brought (one object's passes run in turn).
type seenHooks struct {
	passHooks
	atStart, ended atomic.Int32
}

func (h *seenHooks) Busy(delta int) {
	if delta > 0 {
		h.atStart.Store(h.events.Load())
		return
	}
	h.ended.Store(h.atStart.Load())
	h.passHooks.Busy(delta)
}

// When the object is deleted between the pass's status patch and its patch
// of the object, the latter finds it gone (404) while the watch still has
// the echo of the status patch to deliver, before the DELETED event. That
// echo carries no record of the handling (it was in the patch that failed)
// and must not start a pass that runs the handler again.
func TestObjectGoneBetweenItsTwoPatchesIsNotHandledAgain(t *testing.T) {
	s := newScenario(t)
	s.statusSubresource = true
	hooks := &seenHooks{passHooks: passHooks{waitingHooks: waitingHooks{news: s.poke}}}
	s.hooks = hooks
	var gone atomic.Bool
	s.dyn.PrependReactor("patch", "kopfexamples", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		if a.GetSubresource() != "" || !gone.CompareAndSwap(false, true) {
			return false, nil, nil
		}
		// Deleted meanwhile, and the watch lags: no DELETED event comes
		// before the test ends.
		return true, nil, apierrors.NewNotFound(kexGR, "kex1")
	})
	var calls counter
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		calls.inc(c.Name)
		return map[string]any{"message": "hello"}, nil
	})
	s.create("kex1", map[string]any{"field": "value"})
	s.start()
	s.waitWatching()
	s.until("the object patch refused as gone", func() bool { return gone.Load() && hooks.passes.Load() >= 1 })
	s.until("the status patch landed", func() bool {
		st, _, _ := unstructured.NestedMap(s.get("kex1").Object, "status", "create_fn")
		return st != nil
	})
	// The fake API delivers two events: the listing's and the status
	// patch's. Once a pass that started after both has ended, the echo has
	// had its pass.
	s.until("the echo observed", func() bool { return hooks.events.Load() >= 2 })
	s.until("a pass after the echo", func() bool { return hooks.ended.Load() >= 2 })
	if n := calls.get("kex1"); n != 1 {
		t.Errorf("handler called %d times, want 1", n)
	}
	// A change after the 404 says the object is there after all (a proxy
	// can answer 404 for an object that exists): it is handled, as Kopf
	// handles the next event of an object whose patch found it gone.
	s.update("kex1", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"touched": "yes"}) })
	s.until("handled after the change", func() bool {
		_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
		return ok
	})
	if n := calls.get("kex1"); n != 2 {
		t.Errorf("handler called %d times after a change, want 2 (its outcome was lost with the 404)", n)
	}
}
