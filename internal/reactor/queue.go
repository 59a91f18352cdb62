package reactor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/kopfgo/kopfgo/handlers"
	"github.com/kopfgo/kopfgo/internal/pyrepr"
)

// slot is the worker of one object: at most one exists per object at a time.
type slot struct {
	key  string
	wake chan struct{} // buffered(1): "there is news", coalescing events
	mem  *memory
	// events are the raw watch events waiting for the event handlers,
	// which see every event rather than the latest state; guarded by the
	// processor's mu.
	events []rawEvent
	// sleeping: the last pass slept for delayed handlers (rather than for
	// its own patch to come back), until sleepUntil; only the worker uses
	// them.
	sleeping   bool
	sleepUntil time.Time
	// gone holds the last state of an object deleted from the cluster
	// until its worker says so; guarded by the processor's mu.
	gone *unstructured.Unstructured
}

// memory is what the operator remembers about an object between passes.
// It lives as long as the object's worker and is dropped when the object is
// gone; the initial-listing flags survive idle workers (see processor.mems).
type memory struct {
	mu  sync.Mutex
	uid string
	// initial: first seen in this process's initial listing; handledOnce:
	// fully handled at least once since; together they decide resuming.
	initial     bool
	handledOnce bool
	// expected is the resourceVersion of the operator's latest own patch,
	// until the watch delivers it; expectedAt is when it was patched.
	expected   string
	expectedAt time.Time
	// seen holds the latest versions the watch delivered: the watch may
	// deliver the operator's own patch before the patch call returns.
	seen    [8]string
	seenPos int
	errors  int // consecutive unexpected errors, for throttling
	memo    *handlers.Memo
	spawn   *spawnMemory // daemons and timers (spawning.go)
}

// saw records a version delivered by the watch. Callers hold mu.
func (m *memory) saw(rv string) {
	if rv == m.expected {
		m.expected = ""
	}
	m.seen[m.seenPos%len(m.seen)] = rv
	m.seenPos++
}

// expect records the version of the operator's own patch, unless the watch
// has already delivered it. Callers hold mu.
func (m *memory) expect(rv string, now time.Time) {
	for _, s := range m.seen {
		if s == rv {
			return
		}
	}
	m.expected, m.expectedAt = rv, now
}

// notify records an event of an object and wakes (or starts) its worker;
// ev, when the resource has event handlers, is queued for them.
func (p *processor) notify(ctx context.Context, obj any, initial, deleted bool, ev *rawEvent) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if p.scope != nil && !p.scope(u.GetNamespace()) {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(u)
	if err != nil {
		return
	}
	uid, rv := string(u.GetUID()), u.GetResourceVersion()

	p.mu.Lock()
	defer p.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	mem := p.mems[key]
	if mem == nil || mem.uid != uid {
		if mem != nil {
			mem.forget()
		}
		mem = p.newMemory(uid)
		p.mems[key] = mem
	}
	mem.mu.Lock()
	if initial {
		mem.initial = true
	}
	mem.saw(rv)
	mem.mu.Unlock()
	if deleted {
		delete(p.mems, key)
		mem.forget()
	}
	if ev != nil {
		ev.mem = mem
	}
	p.wakeLocked(ctx, key, mem, ev)
	if deleted && len(p.handlers) > 0 {
		p.slots[key].gone = u
	}
}

// wakeLocked wakes the object's worker, or starts one, with the watch
// event for its event handlers if any. Callers hold p.mu.
func (p *processor) wakeLocked(ctx context.Context, key string, mem *memory, ev *rawEvent) {
	if s, ok := p.slots[key]; ok {
		if ev != nil {
			s.events = append(s.events, *ev)
		}
		select {
		case s.wake <- struct{}{}:
		default:
		}
		return
	}
	s := &slot{key: key, wake: make(chan struct{}, 1), mem: mem}
	if ev != nil {
		s.events = append(s.events, *ev)
	}
	s.wake <- struct{}{}
	p.slots[key] = s
	p.wg.Go(func() { p.work(ctx, s) })
}

// work is an object's worker: it processes the object whenever woken, sleeps
// for delayed handlers, and exits after an idle period without news.
func (p *processor) work(ctx context.Context, s *slot) {
	var (
		wait  time.Duration = -1 // -1: no deadline, wait for news or idle out
		touch bool
	)
	if !p.waitIndexed(ctx) {
		return
	}
	for {
		d, idle := wait, false
		if d < 0 {
			d, idle = p.cfg.Settings.Queueing.IdleTimeout, true
		}
		t := p.cfg.Clock.NewTimer(d)
		if s.sleeping {
			s.sleepUntil = p.cfg.Clock.Now().Add(d)
		}
		if touch && p.cfg.onSleep != nil {
			p.cfg.onSleep(s.key, p.settled(s))
		}
		if p.cfg.onWait != nil {
			p.cfg.onWait()
		}
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.wake:
			t.Stop()
			if wait > 0 && touch && s.sleeping {
				left := s.sleepUntil.Sub(p.cfg.Clock.Now())
				p.logger(s).Debug(fmt.Sprintf("Sleeping was interrupted by new changes, %s seconds left.", pyrepr.Float(left.Seconds())))
			}
		case <-t.C():
			switch {
			case idle:
				if p.retire(s) {
					return
				}
				continue
			case touch:
				s.sleeping = false
				p.touch(ctx, s)
				wait, touch = -1, false
				continue
			}
		}
		s.sleeping = false
		wait, touch = p.pass(ctx, s)
	}
}

// pass runs one pass on a runner (runners.go) rather than on the worker: a
// pass grows a deep stack, and the runtime does not give a grown stack back
// while its goroutine lives: a worker that passed and then idled for
// IdleTimeout kept it, and 10 000 objects listed at start-up held over 100 MB
// of stacks that way.
func (p *processor) pass(ctx context.Context, s *slot) (wait time.Duration, touch bool) {
	p.cfg.hooks().Busy(1) // hook: objects in flight
	defer p.cfg.hooks().Busy(-1)
	p.runners.run(func() {
		p.dispatch(ctx, s) // the object's watch events, in order, first
		p.goodbye(ctx, s)
		wait, touch = p.process(ctx, s)
	})
	return wait, touch
}

// settled reports whether the object's worker has nothing pending: its own
// last patch has come back and no news waits. Taking p.mu as notify does
// means a version already seen has also woken the worker.
func (p *processor) settled(s *slot) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.mem.mu.Lock()
	defer s.mem.mu.Unlock()
	return s.mem.expected == "" && len(s.wake) == 0
}

// retire removes an idle worker unless news arrived meanwhile.
func (p *processor) retire(s *slot) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(s.wake) > 0 {
		return false
	}
	delete(p.slots, s.key)
	return true
}

// wait joins the workers once ctx has ended. Taking the lock first lets a
// notify or poke that saw ctx alive finish starting its worker, so that
// no worker starts after the Wait has begun.
func (p *processor) wait() {
	p.mu.Lock()
	p.mu.Unlock() // empty on purpose: a barrier
	p.wg.Wait()
	p.runners.stop()
}
