package reactor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/pyrepr"
	"github.com/kopfgo/kopfgo/internal/tracing"
	"github.com/kopfgo/kopfgo/patch"
)

// worker runs the passes of one object: at most one exists per object at a
// time, with at most one goroutine. It runs a pass whenever woken, sleeps
// for delayed handlers, parks without its goroutine while it waits only for
// news (park), and retires after an idle period without news.
type worker struct {
	key   string
	wake  chan struct{} // buffered(1): "there is news", coalescing observations
	state *state
	// serving is the shard the worker works for, when its watch serves
	// shards apart (shardserving.go); nil otherwise.
	serving *served
	// queued are the observations waiting for the watching handlers, which
	// see every observation rather than the latest state; guarded by the
	// watcher's mu.
	queued []observation
	// gone is the last observation of an object deleted from the cluster,
	// until the worker says goodbye to it (pass.go); guarded by the
	// watcher's mu.
	gone *observation
	// news is when the oldest news not yet passed over came (an
	// observation or a poke), for the queue-wait metric; guarded by the
	// watcher's mu.
	news time.Time
	// parked, while the worker waits for news without a goroutine (park),
	// is its retirement timer; guarded by the watcher's mu.
	parked *parking
	// admitting: the worker has news but no goroutine, and waits in the
	// run's queue for a pass slot (slots, below); held: the slot is granted
	// and its next pass uses it. Guarded by the watcher's mu.
	admitting bool
	held      bool
	// lastPass is when the worker's last pass started
	// (Queueing.ObjectInterval); only its goroutine uses it.
	lastPass time.Time
}

// parking is a parked worker's retirement: its identity tells a timer that
// fires late from the timer of a later parking.
type parking struct {
	timer clock.Timer
}

// state is what the operator keeps about an object between passes, in its
// own memory and never on the object. It outlives idle workers (the
// initial-listing flags must survive them) and is dropped when the object
// is gone.
type state struct {
	mu  sync.Mutex
	uid string
	// initial: first seen in this process's initial listing; handledOnce:
	// fully handled at least once since; together they decide resuming.
	initial     bool
	handledOnce bool
	// released: the operator removed the last finalizer of the object
	// while it was being deleted, so the object is gone, whatever the cache
	// still holds until the DELETED event (the API server answers that
	// patch with the version already seen, so expected cannot tell).
	released bool
	// vanished: a patch found the object gone (404), and these versions
	// may still come to a pass: the one the watch delivered last before,
	// and the echo of the part of the patch that landed before the 404 (a
	// pass's status patch before its object patch). That echo carries no
	// record of the handling, which was in the part that failed: a pass
	// over it would run the handlers again. Any other version is a change
	// made after the 404 (the object was there after all, as a proxy's
	// answer can claim), handled as usual.
	vanished []string
	// quietly: the throttling is for the API server's trouble (levelOf).
	quietly bool
	// last is the latest version the watch delivered ("" before any).
	last string
	// own follows the operator's own writes until the watch delivers
	// their versions; nil while there are none (most objects, most of the
	// time: it is kept out of every object's state to keep that small).
	own        *ownWrites
	errors     int            // consecutive unexpected errors, for throttling
	memo       *handlers.Memo // the user's Memo of the object
	background *background    // daemons and timers (background.go)
	// serving is the shard the object is served in, when its watch
	// serves shards apart (shardserving.go); nil otherwise.
	serving *served
}

// newState starts an object's state, its memo a shallow copy of the
// operator's memo (compat: memos-operator).
func (w *watcher) newState(uid string) *state {
	memo := &handlers.Memo{}
	if w.Memo != nil {
		memo = w.Memo.Copy()
	}
	return &state{uid: uid, memo: memo}
}

// ownWrites follows the operator's own writes to an object (patches, and
// re-reads that stand in for one) until the watch delivers their versions,
// and keeps a write that failed until it is written.
type ownWrites struct {
	// unwritten is a patch that failed to be written (an API server down or
	// overloaded): the outcome of handlers that have run. The next pass
	// writes it before anything else, so that the handlers are not run
	// again (plan.Rewrite).
	unwritten *patch.Patch
	// expected is the resourceVersion of the operator's latest own patch,
	// until the watch delivers it; expectedAt is when it was patched.
	expected   string
	expectedAt time.Time
	// flying counts the writes sent whose versions are not known yet.
	// While any is, seen holds the versions the watch delivers (and the
	// latest one before), since it may deliver a patch's version before
	// the patch call returns.
	flying int
	seen   [8]string
	pos    int
}

// saw records a version delivered by the watch. Callers hold mu.
func (s *state) saw(rv string) {
	s.last = rv
	o := s.own
	if o == nil {
		return
	}
	if rv == o.expected {
		o.expected = ""
	}
	if o.flying > 0 {
		o.remember(rv)
	}
	s.tidy()
}

func (o *ownWrites) remember(rv string) {
	o.seen[o.pos%len(o.seen)] = rv
	o.pos++
}

// fly records that the operator sends a write whose version land will
// tell. Callers hold mu.
func (s *state) fly() {
	if s.own == nil {
		s.own = &ownWrites{}
	}
	o := s.own
	if o.flying == 0 && s.last != "" {
		// A patch that changes nothing is answered with the version the
		// watch has delivered already.
		o.remember(s.last)
	}
	o.flying++
}

// land records the outcome of a write that fly announced: rv, unless
// empty, is the version it produced, expected unless the watch has
// delivered it already. Callers hold mu.
func (s *state) land(rv string, now time.Time) {
	o := s.own
	o.flying--
	if rv != "" && !slices.Contains(o.seen[:], rv) {
		o.expected, o.expectedAt = rv, now
	}
	if o.flying == 0 {
		o.seen, o.pos = [len(o.seen)]string{}, 0
	}
	s.tidy()
}

// tidy drops the record of own writes once nothing is left in it.
func (s *state) tidy() {
	if o := s.own; o.expected == "" && o.flying == 0 && o.unwritten == nil {
		s.own = nil
	}
}

// vanish records a patch's 404; rv is the version of the part of the patch
// that landed before, "" if none did. Callers hold mu.
func (s *state) vanish(rv string) {
	s.vanished = []string{s.last, rv}
}

// expecting is the version of the operator's own latest patch that the
// watch has not delivered yet ("" if none), and when it was patched.
// Callers hold mu.
func (s *state) expecting() (string, time.Time) {
	if s.own == nil {
		return "", time.Time{}
	}
	return s.own.expected, s.own.expectedAt
}

// behind reports whether the body a pass read from the informer's store is
// older than the latest version the watch has delivered. The pass reads the
// store before it takes the state's lock; an observation that comes in
// between has already cleared the expectation of the operator's own patch
// (saw), so without this check the pass would go on with a body from before
// that patch, and run a finished handler again. (make bench caught it: about
// one creation in a thousand was handled twice at 20 objects/s.) The newer
// version's observation has woken, or is about to wake, the worker, so the
// pass can simply stop. Callers hold mu.
func (s *state) behind(rv string) bool {
	return s.last != "" && rv != s.last // "": nothing delivered yet through this state
}

// handled records that the object has been fully handled once.
func (s *state) handled() {
	s.mu.Lock()
	s.handledOnce = true
	s.mu.Unlock()
}

// stateOf returns the state of the worker's object as it is now, or false
// if the object is gone. A pass reads the object from the informer's store
// before it takes w.mu here, and the informer drops an object from its store
// before it delivers the DELETED observation, whose notify drops the
// object's state: a pass that finds no state for its body may hold the last
// cached version of an object deleted meanwhile. Making it a fresh state
// would lose what the old one knew (the finalizer released, the versions
// seen), and the pass would run the delete handlers a second time (the chaos
// run caught it: about one deletion in a thousand when a daemon's exit woke
// the object as its finalizer went). So a new state is made only for an
// object the store still holds, which w.mu orders after any such notify.
func (w *watcher) stateOf(wk *worker, uid string) (*state, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if st := w.states[wk.key]; st == nil || st.uid != uid {
		if !w.stored(wk.key, uid) {
			return nil, false
		}
	}
	wk.state = w.stateLocked(wk.key, uid, wk.serving)
	return wk.state, true
}

// stored reports whether the informer's store holds the object of uid under
// key, without decoding it.
func (w *watcher) stored(key, uid string) bool {
	obj, exists, err := w.store.GetByKey(key)
	if err != nil || !exists {
		return false
	}
	c, ok := obj.(*kube.Compact)
	return ok && c.UID == uid
}

// stateLocked returns the state of the object under key with uid, served
// in sv: a new object under an old name starts with a fresh state, and the
// old one's daemons stop. Callers hold w.mu.
func (w *watcher) stateLocked(key, uid string, sv *served) *state {
	st := w.states[key]
	if st == nil || st.uid != uid {
		if st != nil {
			st.forget()
		}
		st = w.newState(uid)
		st.serving = sv
		w.states[key] = st
	}
	return st
}

// notify records an observation of an object (c; u decoded when deleted)
// and wakes (or starts) its worker; ob, when the resource has watching
// handlers, is queued for them.
func (w *watcher) notify(ctx context.Context, c *kube.Compact, u *unstructured.Unstructured, initial, deleted bool, ob *observation) {
	key, err := cache.MetaNamespaceKeyFunc(c)
	if err != nil {
		return
	}
	uid, rv := c.UID, c.ResourceVersion

	w.mu.Lock()
	defer w.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	st := w.stateLocked(key, uid, servedIn(ctx))
	st.mu.Lock()
	if initial {
		st.initial = true
	}
	st.saw(rv)
	st.mu.Unlock()
	if deleted {
		delete(w.states, key)
		st.forget()
	}
	if ob != nil {
		ob.state = st
	}
	w.wakeLocked(ctx, key, st, ob)
	if deleted && len(w.changing) > 0 {
		w.workers[key].gone = &observation{typ: handlers.EventDeleted, obj: u, state: st}
	}
}

// poke wakes the object's worker, starting one if it has retired, for a
// pass that comes from the object's daemons rather than from the watch.
func (w *watcher) poke(ctx context.Context, key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	if st := w.states[key]; st != nil {
		w.wakeLocked(ctx, key, st, nil)
	}
}

// wakeLocked wakes the object's worker, or starts one, with the
// observation for its watching handlers if any. Callers hold w.mu.
func (w *watcher) wakeLocked(ctx context.Context, key string, st *state, ob *observation) {
	wk, ok := w.workers[key]
	if !ok {
		wk = &worker{key: key, wake: make(chan struct{}, 1), state: st, serving: servedIn(ctx)}
		w.workers[key] = wk
	}
	if ob != nil {
		wk.queued = append(wk.queued, *ob)
	}
	if wk.news.IsZero() {
		wk.news = w.Clock.Now()
	}
	select {
	case wk.wake <- struct{}{}:
	default:
	}
	switch {
	case !ok:
	case wk.admitting:
		return // the slot's grant starts it
	case wk.parked != nil: // it waits without a goroutine (park)
		wk.parked.timer.Stop()
		wk.parked = nil
	default:
		return // its goroutine takes the wake-up
	}
	if !w.slots.take() {
		// Waiting for a slot, the object is its worker in the queue only.
		wk.admitting = true
		w.slots.enqueue(func() bool { return w.launch(ctx, wk) })
		return
	}
	wk.held = true
	w.goWork(ctx, wk)
}

// launch starts the goroutine of a worker whose turn for a pass slot has
// come, the slot held for its pass; false if the watcher has stopped
// meanwhile (the slot goes to the next in the queue).
func (w *watcher) launch(ctx context.Context, wk *worker) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	wk.admitting = false
	if ctx.Err() != nil {
		return false
	}
	wk.held = true
	w.goWork(ctx, wk)
	return true
}

// goWork starts the goroutine of a worker, which its shard's wait counts
// too when its watch serves shards apart. Callers hold w.mu.
func (w *watcher) goWork(ctx context.Context, wk *worker) {
	sv := wk.serving
	if sv == nil {
		w.wg.Go(func() { w.work(ctx, wk) })
		return
	}
	sv.wg.Add(1)
	w.wg.Go(func() {
		defer sv.wg.Done()
		w.work(ctx, wk)
	})
}

// slot takes the pass slot of the worker's next pass: the one granted to
// it, or a free one nobody waits for. When there is none, the worker joins
// the queue as a worker without a goroutine (as wakeLocked queues one), its
// news kept for the grant's goroutine, and slot reports false: the caller's
// goroutine ends. A goroutine waiting for its turn held its stack: in a
// burst of creations, the echo of each object's own patch comes during its
// pass, and 10 000 objects kept about 4000 such goroutines waiting.
func (w *watcher) slot(ctx context.Context, wk *worker) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wk.held {
		wk.held = false
		return true
	}
	if w.slots.take() {
		return true
	}
	wk.admitting = true
	select {
	case wk.wake <- struct{}{}: // the grant's goroutine passes at once
	default:
	}
	w.slots.enqueue(func() bool { return w.launch(ctx, wk) })
	return false
}

// paced waits until the worker's next pass may start under the caps of
// the resource's passes per second and the object's interval between
// passes; false if ctx ends first. A slot held meanwhile goes back to the
// queue: waiting here, the object must not keep other resources' objects
// waiting too.
func (w *watcher) paced(ctx context.Context, wk *worker) bool {
	now := w.Clock.Now()
	var d time.Duration
	if w.rate != nil {
		d = w.rate.ReserveN(now, 1).DelayFrom(now)
	}
	if iv := w.Settings.Queueing.ObjectInterval; iv > 0 && !wk.lastPass.IsZero() {
		d = max(d, wk.lastPass.Add(iv).Sub(now))
	}
	if d <= 0 {
		return true
	}
	w.unhold(wk)
	t := w.Clock.NewTimer(d)
	defer t.Stop()
	if w.onWait != nil {
		w.onWait()
	}
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// unhold gives back a slot the worker holds but will not use.
func (w *watcher) unhold(wk *worker) {
	w.mu.Lock()
	held := wk.held
	wk.held = false
	w.mu.Unlock()
	if held {
		w.slots.release()
	}
}

// next is when a worker runs the object's next pass: after wait (negative:
// only on news), and whether the wait ends with a touch patch that wakes
// delayed handlers (touch) or with a plain pass (consistency, throttling).
// sleeping: the pass sleeps for delayed handlers, rather than for its own
// patch to come back (touch without sleeping).
type next struct {
	wait     time.Duration
	touch    bool
	sleeping bool
}

// onNews: the next pass comes only with news.
var onNews = next{wait: -1}

// work is an object's worker loop. It returns when the object is idle
// (parked or retired), when ctx ends, or when its next pass waits for a
// slot (slot), the worker then in the queue without a goroutine.
func (w *watcher) work(ctx context.Context, wk *worker) {
	queued := false
	defer func() {
		if !queued { // once queued, the slot's grant may start a goroutine that holds it
			w.unhold(wk)
		}
	}()
	n := onNews
	if !w.waitIndexed(ctx) {
		return
	}
	for {
		if n.wait < 0 && w.park(wk) {
			return // woken by wakeLocked, retired by its timer
		}
		d, idle := n.wait, false
		if d < 0 {
			d, idle = w.Settings.Queueing.IdleTimeout, true
		}
		t := w.Clock.NewTimer(d)
		var sleepUntil time.Time
		if n.sleeping {
			sleepUntil = w.Clock.Now().Add(d)
		}
		if n.touch && w.onSleep != nil {
			w.onSleep(wk.key, w.settled(wk))
		}
		if w.onWait != nil {
			w.onWait()
		}
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-wk.wake:
			t.Stop()
			if n.wait > 0 && n.touch && n.sleeping {
				left := sleepUntil.Sub(w.Clock.Now())
				w.loggerOf(wk).Debug(fmt.Sprintf("Sleeping was interrupted by new changes, %s seconds left.", pyrepr.Float(left.Seconds())))
			}
		case <-t.C():
			switch {
			case idle:
				if w.retire(wk) {
					return
				}
				continue
			case n.touch:
				w.touch(ctx, wk)
				n = onNews
				continue
			}
		}
		if n, queued = w.pass(ctx, wk); queued {
			return
		}
	}
}

// pass runs one pass, in the pool (see pool) rather than on the worker: the
// object's queued observations for the watching handlers first, in order,
// then the pass over its latest state (pass.go). queued: no slot was free,
// and the worker waits for one in the queue (slot); the caller's goroutine
// must end without touching the worker.
func (w *watcher) pass(ctx context.Context, wk *worker) (n next, queued bool) {
	if !w.paced(ctx, wk) {
		return onNews, false // stopping
	}
	if !w.slot(ctx, wk) {
		return onNews, true
	}
	wk.lastPass = w.Clock.Now()
	defer w.slots.release()
	w.hooks().Busy(1) // hook: objects in flight
	defer w.hooks().Busy(-1)
	w.mu.Lock()
	news := wk.news
	wk.news = time.Time{}
	w.mu.Unlock()
	if !news.IsZero() {
		w.hooks().QueueWait(w.Clock.Since(news)) // hook: queue wait
	}
	w.pool.run(func() {
		ctx, end := w.passSpan(ctx, wk)
		w.dispatch(ctx, wk)
		w.goodbye(ctx, wk)
		n = w.process(ctx, wk)
		if end != nil {
			end()
		}
	})
	return n, false
}

// passSpan prepares the span of a pass over the worker's object when
// tracing is on, which the pass starts once it acts (acting); the function
// ends it. Nil when tracing is off, or when the object is gone.
func (w *watcher) passSpan(ctx context.Context, wk *worker) (context.Context, func()) {
	if w.Tracer == nil {
		return ctx, nil
	}
	u, ok := w.latest(wk.key)
	if !ok {
		return ctx, nil
	}
	return w.Tracer.Pass(ctx, tracing.Object{
		Resource: w.res.String(), Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID()),
		Annotations: u.GetAnnotations(),
	})
}

// loggerOf is the logger of the worker's object as the store has it.
func (w *watcher) loggerOf(wk *worker) *slog.Logger {
	u, ok := w.latest(wk.key)
	if !ok {
		return w.Logger
	}
	return w.objectLogger(u)
}

// settled reports whether the object's worker has nothing pending: its own
// last patch has come back and no news waits. Taking w.mu as notify does
// means a version already seen has also woken the worker.
func (w *watcher) settled(wk *worker) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	wk.state.mu.Lock()
	defer wk.state.mu.Unlock()
	expected, _ := wk.state.expecting()
	return expected == "" && len(wk.wake) == 0
}

// park lets a worker that waits only for news wait without its goroutine,
// unless news has come already: the worker stays the object's (wakeLocked
// starts a goroutine for it again) until the idle timeout retires it. A
// goroutine per waiting worker cost a stack each (most of the operator's
// memory at start-up, when every listed object has just had its pass) and
// the collector's scan of those stacks. It needs a clock with AfterFunc;
// with another, the worker waits on its goroutine.
func (w *watcher) park(wk *worker) bool {
	clk, ok := w.Clock.(clock.WithDelayedExecution)
	if !ok {
		return false
	}
	w.mu.Lock()
	if len(wk.wake) > 0 || wk.held { // news, or a slot granted for its pass
		w.mu.Unlock()
		return false
	}
	p := &parking{}
	// The timer's function takes w.mu, so it cannot see p before the
	// timer is in it.
	// The retirement runs on a goroutine of its own, as the real clock's
	// AfterFunc runs it: a fake clock runs it under its own lock, which
	// goroutines holding w.mu take too (Now, Stop), and took w.mu there.
	p.timer = clk.AfterFunc(w.Settings.Queueing.IdleTimeout, func() { go w.retireParked(wk, p) })
	wk.parked = p
	w.mu.Unlock()
	if w.onWait != nil {
		w.onWait()
	}
	return true
}

// retireParked removes a parked worker whose idle timeout has passed,
// unless news has woken it since.
func (w *watcher) retireParked(wk *worker, p *parking) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wk.parked == p && w.workers[wk.key] == wk {
		delete(w.workers, wk.key)
		wk.parked = nil
	}
}

// retire removes an idle worker unless news arrived meanwhile.
func (w *watcher) retire(wk *worker) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(wk.wake) > 0 {
		return false
	}
	delete(w.workers, wk.key)
	return true
}

// stop joins the workers once ctx has ended, then stops the objects'
// daemons and timers and waits for them: a watcher started again for the
// same resource (a resume, a resource back after an API server restart)
// would otherwise spawn each object's daemons beside the old ones. Taking
// the lock first lets a notify or poke that saw ctx alive finish starting
// its worker, so that no worker starts after the Wait has begun.
func (w *watcher) stop(ctx context.Context) {
	w.mu.Lock()
	w.mu.Unlock() // empty on purpose: a barrier
	w.wg.Wait()
	w.pool.stop()
	w.quiesce(func(*served) bool { return true }, false, haltReason(ctx))
}

// haltReason is what the daemons and timers of a watch (or of a shard
// served apart) stopping in ctx see: a pause, the resource gone, or the
// operator's exit.
func haltReason(ctx context.Context) error {
	reason := context.Cause(ctx)
	if !errors.Is(reason, handlers.ErrOperatorPausing) && !errors.Is(reason, handlers.ErrResourceDeleted) {
		reason = handlers.ErrOperatorExiting
	}
	return reason
}

// quiesce, once the workers of the objects served in the shards that
// match have returned, stops their parked workers' retirement timers and
// halts their daemons and timers with reason, and waits for them; drop
// also forgets those workers and states (a shard handed over).
func (w *watcher) quiesce(match func(*served) bool, drop bool, reason error) {
	// The parked workers' timers stop outside w.mu: a fake clock runs a
	// due timer's function (retireParked, which takes w.mu) under its own
	// lock, which Stop takes too. With parked cleared first, a timer that
	// fires meanwhile does nothing.
	var (
		timers []clock.Timer
		waits  []func()
	)
	w.mu.Lock()
	for key, wk := range w.workers {
		if !match(wk.serving) {
			continue
		}
		if wk.parked != nil {
			timers = append(timers, wk.parked.timer)
			wk.parked = nil
		}
		if drop {
			delete(w.workers, key)
		}
	}
	for key, st := range w.states {
		if !match(st.serving) {
			continue
		}
		if drop {
			delete(w.states, key)
		}
		st.mu.Lock()
		bg := st.background
		st.mu.Unlock()
		if bg != nil {
			waits = append(waits, bg.set.Halt(reason))
		}
	}
	w.mu.Unlock()
	for _, t := range timers {
		t.Stop()
	}
	for _, wait := range waits {
		wait()
	}
}

// pool is the set of goroutines that carry passes. A pass grows a deep
// stack (JSON, diffs, the API client), and growing it costs CPU every time:
// a goroutine per pass spent several percent of the operator's CPU copying
// stacks in a burst of new objects. The pool's goroutines outlive their
// passes, so a stack is grown once per goroutine; they exit after a short
// idleness, so that grown stacks do not stay with thousands of idle objects
// (which is also why a pass does not run on its object's long-lived worker:
// the runtime does not give a grown stack back while its goroutine lives,
// and 10 000 objects listed at start-up held over 100 MB of stacks that way).
type pool struct {
	jobs chan func()
	quit chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// poolIdle is how long a pool goroutine waits for another pass before it
// exits. It is no behaviour anyone can observe, only a trade of memory for
// CPU, so it is real time rather than the operator's injected clock.
const poolIdle = 2 * time.Second

func newPool() *pool {
	return &pool{jobs: make(chan func()), quit: make(chan struct{})}
}

// run runs f on an idle goroutine of the pool, or on a new one if none is
// idle, and returns when f has returned.
func (p *pool) run(f func()) {
	done := make(chan struct{})
	job := func() {
		defer close(done)
		f()
	}
	select {
	case p.jobs <- job:
	default:
		p.wg.Go(func() { p.loop(job) })
	}
	<-done
}

func (p *pool) loop(job func()) {
	idle := time.NewTimer(poolIdle)
	defer idle.Stop()
	for {
		job()
		idle.Reset(poolIdle)
		select {
		case job = <-p.jobs:
		case <-idle.C:
			return
		case <-p.quit:
			return
		}
	}
}

// stop ends the idle goroutines and waits for all of them; callers make
// sure that no pass is running or will be submitted.
func (p *pool) stop() {
	p.once.Do(func() { close(p.quit) })
	p.wg.Wait()
}

// slots bound the passes in flight across every watcher of a run. Without a
// bound, an operator that finds thousands of unhandled objects at once (a
// start after downtime, a failover, a shard taken over, a bulk apply) ran a
// pass for each of them at once: a goroutine and a decoded body per object,
// and a patch per object sent to an API server that answered with 504s, so
// that handlers whose outcomes were not written ran again (10 000 objects:
// 18 507 handler calls, 8 504 failed patches, 996 MB of RSS).
//
// Objects waiting for a pass wait here in one FIFO, in the order their news
// came, as their worker only: no goroutine and no decoded body (the
// informer's store keeps the object compact). A worker whose goroutine
// lives (it slept for a delayed handler, or news came during its pass)
// and finds no free slot gives its goroutine up and joins the same FIFO
// (watcher.slot), so a busy object cannot pass ahead of the waiting ones,
// nor keep a goroutine while it waits.
type slots struct {
	// limit is the bound now: it follows the API's flow control, which
	// changes it as the API server's latency and errors change; <= 0 is no
	// bound. Nil: no bound.
	limit func() int

	mu    sync.Mutex
	busy  int
	queue []*slotWaiter // FIFO from head
	head  int
	// waiting counts the waiters in the queue.
	waiting int
}

// slotWaiter waits in the queue for a slot. grant is called with the slot
// taken, outside the lock; it returns false when the waiter does not use
// the slot (its watcher has stopped), which gives the slot back.
type slotWaiter struct {
	grant func() bool
}

func newSlots(limit func() int) *slots {
	return &slots{limit: limit}
}

// roomLocked reports whether one more pass may start now.
func (s *slots) roomLocked() bool {
	if s.limit == nil {
		return true
	}
	n := s.limit()
	return n <= 0 || s.busy < n
}

// take takes a slot if one is free and nobody waits for one, without
// waiting.
func (s *slots) take() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting > 0 || !s.roomLocked() {
		return false
	}
	s.busy++
	return true
}

// enqueue queues grant for the next free slot. It never calls grant
// itself, so callers may hold locks that grant takes.
func (s *slots) enqueue(grant func() bool) {
	s.mu.Lock()
	s.pushLocked(&slotWaiter{grant: grant})
	s.mu.Unlock()
}

// release gives a slot back, and grants it (or the room a raised limit
// made) to the waiters at the head of the queue.
func (s *slots) release() { s.settle(-1) }

// settle changes the slots taken by delta and grants free ones in FIFO
// order; a grant that is refused comes back and goes to the next waiter.
func (s *slots) settle(delta int) {
	s.mu.Lock()
	s.busy += delta
	for {
		var granted []*slotWaiter
		for s.waiting > 0 && s.roomLocked() {
			wt := s.popLocked()
			s.busy++
			granted = append(granted, wt)
		}
		s.mu.Unlock()
		refused := 0
		for _, wt := range granted {
			if !wt.grant() {
				refused++
			}
		}
		if refused == 0 {
			return
		}
		s.mu.Lock()
		s.busy -= refused
	}
}

// Waiting is the number of objects waiting for a pass (a gauge).
func (s *slots) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

func (s *slots) pushLocked(wt *slotWaiter) {
	s.queue = append(s.queue, wt)
	s.waiting++
}

// popLocked takes the first waiter; callers know there is one (waiting >
// 0).
func (s *slots) popLocked() *slotWaiter {
	wt := s.queue[s.head]
	s.queue[s.head] = nil
	s.head++
	s.waiting--
	switch {
	case s.head == len(s.queue):
		s.queue, s.head = s.queue[:0], 0
	case s.head > len(s.queue)/2 && s.head > 64:
		// Give the consumed half of the backing array back.
		s.queue = append([]*slotWaiter(nil), s.queue[s.head:]...)
		s.head = 0
	}
	return wt
}
