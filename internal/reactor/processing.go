package reactor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/kopfgo/kopfgo/causes"
	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/handlers"
	"github.com/kopfgo/kopfgo/indexing"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/logging"
	"github.com/kopfgo/kopfgo/internal/patch"
	"github.com/kopfgo/kopfgo/internal/posting"
	"github.com/kopfgo/kopfgo/internal/pyrepr"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/persistence"
)

// processor handles the objects of one watched resource and namespace.
type processor struct {
	cfg      Config
	client   *kube.Client
	res      resources.Resource
	handlers []*handlers.Handler
	store    cache.Store
	invoke   func(ctx context.Context, call func())
	// scope filters objects by namespace when the watch is wider than the
	// operator's scope (namespace patterns); nil serves all.
	scope func(namespace string) bool

	extraFields [][]string
	// events and indexers see every watch event (events.go).
	events   []*handlers.EventHandler
	indexers []indexing.Runner

	// spawning are the daemons and timers of the resource (spawning.go);
	// idleTimers: some of them idle, so essential changes are tracked.
	spawning   []*handlers.Spawning
	idleTimers bool

	runners *runners // run the passes (runners.go)

	mu    sync.Mutex
	slots map[string]*slot
	mems  map[string]*memory
	wg    sync.WaitGroup
}

func newProcessor(cfg Config, client *kube.Client, res resources.Resource, hs []*handlers.Handler, store cache.Store) *processor {
	p := &processor{
		cfg: cfg, client: client, res: res, handlers: hs, store: store,
		extraFields: handlers.ExtraFields(hs),
		runners:     newRunners(),
		slots:       map[string]*slot{},
		mems:        map[string]*memory{},
	}
	if cfg.Limiter != nil {
		p.invoke = func(ctx context.Context, call func()) {
			select {
			case cfg.Limiter <- struct{}{}:
				defer func() { <-cfg.Limiter }()
				call()
			case <-ctx.Done():
				call() // the handler sees the cancelled ctx and should return at once
			}
		}
	}
	return p
}

func (p *processor) logger(s *slot) *slog.Logger {
	obj, ok, _ := p.store.GetByKey(s.key)
	if !ok {
		return p.cfg.Logger
	}
	return p.objectLogger(obj.(*unstructured.Unstructured))
}

func (p *processor) objectLogger(u *unstructured.Unstructured) *slog.Logger {
	ref := posting.Ref{
		APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Name: u.GetName(),
		UID: string(u.GetUID()), Namespace: u.GetNamespace(),
	}
	// With settings.posting.loggers, the messages also become events.
	return p.cfg.Poster.Logger(logging.WithObject(p.cfg.Logger, logging.ObjectRef(ref)), ref)
}

// memoryOf returns the memory of the object as it is now; a new object under
// an old name starts with a fresh memory.
func (p *processor) memoryOf(s *slot, uid string) *memory {
	p.mu.Lock()
	defer p.mu.Unlock()
	mem := p.mems[s.key]
	if mem == nil || mem.uid != uid {
		if mem != nil {
			mem.forget()
		}
		mem = p.newMemory(uid)
		p.mems[s.key] = mem
	}
	s.mem = mem
	return mem
}

// process runs one pass for the object's latest state. It returns how long
// to wait before the next pass unless news arrives (-1: only on news), and
// whether the wait ends with a touch patch (delayed handlers) or just
// another pass (consistency, throttling).
func (p *processor) process(ctx context.Context, s *slot) (time.Duration, bool) {
	obj, exists, err := p.store.GetByKey(s.key)
	if err != nil || !exists {
		return -1, false // gone: its memory went with the DELETED event
	}
	u := obj.(*unstructured.Unstructured)
	body := u.Object
	mem := p.memoryOf(s, string(u.GetUID()))
	log := p.objectLogger(u)
	now := p.cfg.Clock.Now()

	mem.mu.Lock()
	if mem.behind(u.GetResourceVersion()) {
		mem.mu.Unlock()
		return -1, false // the newer version's notification wakes the worker again
	}
	if mem.expected != "" && u.GetResourceVersion() != mem.expected {
		left := p.cfg.Settings.Persistence.ConsistencyTimeout - now.Sub(mem.expectedAt)
		if left > 0 {
			mem.mu.Unlock()
			return left, false
		}
		// The cached state predates the operator's own patch: acting on it
		// could run the handlers it already ran. The API has the truth.
		log.Debug(fmt.Sprintf("The operator's own patch (resourceVersion %s) has not come back within the consistency timeout; re-reading the object.", mem.expected))
		mem.expected = ""
		mem.mu.Unlock()
		fresh, ok := p.reread(ctx, u, log)
		if !ok {
			return -1, false
		}
		mem.mu.Lock()
		if fresh.GetResourceVersion() != u.GetResourceVersion() {
			// Sit out the older versions the watch is still to deliver.
			mem.expect(fresh.GetResourceVersion(), now)
		}
		u, body = fresh, fresh.Object
	}
	initial := mem.initial && !mem.handledOnce
	if mem.memo == nil {
		mem.memo = &handlers.Memo{}
	}
	memo := mem.memo
	mem.mu.Unlock()
	sp := p.spawn(ctx, s, u, mem, log, memo)

	st := p.cfg.Settings.Persistence
	fin := st.Finalizer
	pt := &patch.Patch{}
	deleting := causes.IsDeleting(body)
	hasFin := causes.HasFinalizer(body, fin)
	if len(p.handlers) == 0 || deleting && sp.deleteHandled {
		// Daemons, timers, event handlers or indexers only, or a deletion
		// whose handlers are done: the finalizer is the daemons' and timers'
		// alone (compat: persistence-finalizer). (A finalizer left by an earlier version of the
		// operator goes too: no handler has the object in scope.)
		switch {
		case sp.requires && !deleting && !hasFin:
			log.Debug("Adding the finalizer, thus preventing the actual deletion.")
			causes.AddFinalizer(body, pt, fin)
			return p.applyGuarded(ctx, u, mem, log, pt, -1, true)
		case !sp.requires && !deleting && hasFin:
			log.Debug("Removing the finalizer, as there are no handlers requiring it.")
			causes.RemoveFinalizer(body, pt, fin)
			return p.applyGuarded(ctx, u, mem, log, pt, -1, false)
		}
		return p.releaseAfterDaemons(ctx, u, mem, log, pt, sp)
	}

	old, essence, err := p.states(body)
	if err != nil {
		log.Warn(fmt.Sprintf("Ignoring the unreadable last-handled configuration; the object is handled as never handled before: %v", err))
	}
	diff := diffbase.Compute(old, essence)
	reason := causes.Detect(causes.Input{
		Body: body, Finalizer: fin, Old: old, New: essence, Diff: diff, Initial: initial,
	})
	cause := &handlers.Cause{
		Reason: reason, Initial: initial, Body: body, Old: old, New: essence, Diff: diff,
		Resource: p.res, Patch: pt, Logger: log, Memo: memo,
		Handling: p.cfg.Settings.Handling,
	}

	// An object that no handler's filters match is handled in stealth mode:
	// nothing is stored on it and nothing is logged about it; if it starts
	// matching later, it is new to the operator (compat: filters-stealth). The finalizer is
	// needed only where a delete handler matches (compat: persistence-finalizer).
	inScope := handlers.Prematch(p.handlers, cause)
	requiresFinalizer := inScope && handlers.RequiresFinalizerFor(p.handlers, cause) || sp.requires
	switch {
	case requiresFinalizer && !deleting && !hasFin:
		log.Debug("Adding the finalizer, thus preventing the actual deletion.")
		causes.AddFinalizer(body, pt, fin)
		return p.applyGuarded(ctx, u, mem, log, pt, -1, true)
	case !requiresFinalizer && hasFin && (!deleting || !inScope && !sp.holding):
		log.Debug("Removing the finalizer, as there are no handlers requiring it.")
		causes.RemoveFinalizer(body, pt, fin)
		return p.applyGuarded(ctx, u, mem, log, pt, -1, false)
	}
	if !inScope {
		if deleting {
			return p.releaseAfterDaemons(ctx, u, mem, log, pt, sp)
		}
		return -1, false
	}

	switch reason {
	case causes.Gone:
		return -1, false
	case causes.Free:
		log.Debug("Deletion, but we are done with it, and we do not care.")
		log.Debug(cycleFinished)
		return -1, false
	case causes.Noop:
		mem.mu.Lock()
		mem.handledOnce = true
		mem.mu.Unlock()
		log.Debug("Something has changed, but we are not interested (the essence is the same).")
		log.Debug(cycleFinished)
		return -1, false
	}

	selected := handlers.Select(p.handlers, cause)
	cycle := handlers.Cycle{
		Reason: reason, Handlers: selected, Known: p.handlers,
		Body: body, Resource: p.res, Old: old, New: essence, Diff: diff,
		Patch: pt, Storage: st.ProgressStorage, Clock: p.cfg.Clock, Logger: log, Memo: memo,
		DefaultBackoff: p.cfg.Settings.Execution.DefaultBackoff,
		Invoke:         p.invoke, Handling: p.cfg.Settings.Handling,
		Observe: p.cfg.hooks().Handler, // hook: handler invocations
	}
	logProgress(ctx, log, reason, body, old, essence, diff)
	out := cycle.Run(p.cfg.handlerCtx)
	removeFin := false
	if ctx.Err() != nil && !out.Ran {
		return -1, false
	}
	if out.Done {
		mem.mu.Lock()
		mem.handledOnce = true
		mem.mu.Unlock()
		if reason == causes.Delete {
			if hasFin && !p.holdDeletion(mem, sp, log) {
				log.Debug("Removing the finalizer, thus allowing the actual deletion.")
				removeFin = true
			}
		} else {
			st.DiffBaseStorage.Store(body, pt, essence)
		}
	}
	next := time.Duration(-1)
	touch := false
	if !out.Done && out.Delay > 0 {
		next, touch = out.Delay, true
		if pt.IsEmpty() {
			s.sleeping = true
			log.Debug(fmt.Sprintf("Sleeping for %s seconds for the delayed handlers.", pyrepr.Float(out.Delay.Seconds())))
		} else {
			// The patch's own watch event wakes the object before the
			// delay ends; the delay is computed anew then.
			log.Debug(fmt.Sprintf("Sleeping was skipped because of the patch, %s seconds left.", pyrepr.Float(out.Delay.Seconds())))
		}
	}
	if pt.IsEmpty() && next < 0 {
		// Kopf's signal that the object has settled: nothing to patch,
		// nothing delayed; users and tests wait for it.
		log.Debug(cycleFinished)
	}
	var wait time.Duration
	if removeFin {
		wait, _ = p.applyGuarded(ctx, u, mem, log, pt, next, false)
	} else {
		wait, _ = p.apply(ctx, u, mem, log, pt, next)
	}
	if wait != next {
		return wait, false // throttled by an error
	}
	return next, touch
}

// states returns the object's last handled essence (nil if never handled,
// or if it cannot be read: err says why) and its current essence, both
// without the progress storage's own fields.
func (p *processor) states(body map[string]any) (old, essence map[string]any, err error) {
	st := p.cfg.Settings.Persistence
	old, err = st.DiffBaseStorage.Fetch(body)
	if err != nil {
		old = nil
	}
	if old != nil {
		old = st.ProgressStorage.Clear(old)
	}
	return old, st.ProgressStorage.Clear(st.DiffBaseStorage.Build(body, p.extraFields)), err
}

// goodbye writes Kopf's last line about an object deleted from the cluster
// that the changing handlers have in scope, in the order Kopf writes it:
// after the event handlers of the deletion. The scope is worked out only if
// the line is to be written.
func (p *processor) goodbye(ctx context.Context, s *slot) {
	p.mu.Lock()
	u := s.gone
	s.gone = nil
	p.mu.Unlock()
	if u == nil {
		return
	}
	log := p.objectLogger(u)
	if !log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	old, essence, _ := p.states(u.Object) // an unreadable diff-base: never handled
	cause := &handlers.Cause{
		Reason: causes.Gone, Body: u.Object, Old: old, New: essence, Diff: diffbase.Compute(old, essence),
		Resource: p.res, Patch: &patch.Patch{}, Logger: log, Handling: p.cfg.Settings.Handling,
	}
	if s.mem != nil {
		cause.Memo = s.mem.memo
	}
	if handlers.Prematch(p.handlers, cause) {
		log.Debug("Deleted, really deleted, and we are notified.")
	}
}

// reread gets the object from the API when the watch lags behind the
// operator's own patches. It returns the cached object if the API cannot
// answer (the pass then goes on as Kopf's would), and false if the object is
// gone or has been replaced by another of the same name.
func (p *processor) reread(ctx context.Context, u *unstructured.Unstructured, log *slog.Logger) (*unstructured.Unstructured, bool) {
	fresh, err := p.client.Get(ctx, p.res, u.GetNamespace(), u.GetName())
	switch {
	case errors.Is(err, kube.ErrGone):
		return nil, false
	case err != nil:
		log.Warn(fmt.Sprintf("Cannot re-read the object; going on with its cached state: %v", err))
		return u, true
	case fresh.GetUID() != u.GetUID():
		return nil, false // its watch events are on the way
	}
	if !p.cfg.Settings.Watching.KeepManagedFields {
		kube.DropManagedFields(fresh) // as the watched objects are
	}
	return fresh, true
}

// apply sends the patch and remembers the resulting version, so that the next
// pass waits for the watch to catch up with it. On unexpected errors, the
// object is throttled with growing delays; other objects are unaffected.
func (p *processor) apply(ctx context.Context, u *unstructured.Unstructured, mem *memory, log *slog.Logger, pt *patch.Patch, next time.Duration) (time.Duration, bool) {
	if pt.IsEmpty() {
		return next, false
	}
	st := p.cfg.Settings.Persistence
	st.ProgressStorage.Touch(u.Object, pt, nil) // a real patch makes the touch-dummy unnecessary
	logPatch(ctx, log, pt)
	// The outcome of a handler that has run must reach the object even when
	// the operator is stopping, or the handler would run again after restart.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), applyTimeout)
	defer cancel()
	res, err := p.client.Apply(actx, p.res, u.GetNamespace(), u.GetName(), pt)
	if errors.Is(err, kube.ErrGone) {
		log.Debug("The object is gone while patching; nothing to do.")
		return -1, false
	}
	if apierrors.IsConflict(err) {
		return -1, true
	}
	mem.mu.Lock()
	defer mem.mu.Unlock()
	if err != nil {
		delays := p.cfg.Settings.Queueing.ErrorDelays
		d := delays[min(mem.errors, len(delays)-1)]
		mem.errors++
		log.Error(fmt.Sprintf("Throttling for %g seconds due to an unexpected error: %v", d.Seconds(), err))
		return d, false
	}
	if mem.errors > 0 {
		log.Info("Throttling is over. Switching back to normal operations.")
	}
	mem.errors = 0
	if res != "" && st.ConsistencyTimeout > 0 {
		mem.expect(res, p.cfg.Clock.Now())
	}
	return next, false
}

// applyTimeout bounds the final patch of a pass when the operator stops.
const applyTimeout = 30 * time.Second

// touch wakes delayed handlers: a dummy annotation changes, the watch sees
// the object anew, and the next pass finds the handlers awake.
func (p *processor) touch(ctx context.Context, s *slot) {
	obj, exists, _ := p.store.GetByKey(s.key)
	if !exists {
		return
	}
	u := obj.(*unstructured.Unstructured)
	mem := p.memoryOf(s, string(u.GetUID()))
	pt := &patch.Patch{}
	stamp := persistence.FormatTime(p.cfg.Clock.Now())
	p.cfg.Settings.Persistence.ProgressStorage.Touch(u.Object, pt, &stamp)
	log := p.objectLogger(u)
	log.Debug("Touching the object to wake the delayed handlers.")
	res, err := p.client.Apply(ctx, p.res, u.GetNamespace(), u.GetName(), pt)
	if err != nil {
		if !errors.Is(err, kube.ErrGone) && ctx.Err() == nil {
			log.Error(fmt.Sprintf("Cannot touch the object to wake its delayed handlers: %v", err))
		}
		return
	}
	if res != "" && p.cfg.Settings.Persistence.ConsistencyTimeout > 0 {
		mem.mu.Lock()
		mem.expect(res, p.cfg.Clock.Now())
		mem.mu.Unlock()
	}
}

// applyGuarded applies a patch that changes the finalizers. A merge patch
// replaces lists whole, so a finalizer list computed from a stale body would
// silently undo another controller's change: the patch carries the
// resourceVersion it was computed from, and on a conflict the list is
// recomputed from the object's current version and sent again. The rest of
// the patch (handlers' outcomes) goes along unchanged, so nothing is lost.
func (p *processor) applyGuarded(ctx context.Context, u *unstructured.Unstructured, mem *memory, log *slog.Logger, pt *patch.Patch, next time.Duration, add bool) (time.Duration, bool) {
	fin := p.cfg.Settings.Persistence.Finalizer
	cur := u
	for attempt := 0; ; attempt++ {
		pt.Meta()["resourceVersion"] = cur.GetResourceVersion()
		if add {
			causes.AddFinalizer(cur.Object, pt, fin)
		} else {
			causes.RemoveFinalizer(cur.Object, pt, fin)
		}
		wait, conflict := p.apply(ctx, cur, mem, log, pt, next)
		if !conflict {
			return wait, false
		}
		if attempt >= 5 {
			log.Error("Cannot change the finalizers: the object keeps changing; retrying later.")
			return p.cfg.Settings.Queueing.ErrorDelays[0], false
		}
		log.Debug("The object has changed meanwhile; recomputing the finalizers.")
		fresh, err := p.client.Get(ctx, p.res, u.GetNamespace(), u.GetName())
		if err != nil {
			if errors.Is(err, kube.ErrGone) {
				return -1, false
			}
			log.Error(fmt.Sprintf("Cannot re-read the object to change its finalizers: %v", err))
			return p.cfg.Settings.Queueing.ErrorDelays[0], false
		}
		cur = fresh
	}
}

// cycleFinished is Kopf's line for an object whose handling has settled.
const cycleFinished = "Handling cycle is finished, waiting for new changes."

// logProgress writes Kopf's debug lines of a cause on every pass, handlers
// or not: the object's body and, for a change of a handled object, the diff,
// both as Python's repr() (internal/pyrepr). Rendering a whole body is the
// costliest line per pass, so nothing is rendered unless debug is on.
func logProgress(ctx context.Context, log *slog.Logger, reason causes.Reason, body, old, essence map[string]any, diff diffbase.Diff) {
	if !log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	title := reason.Title()
	log.Debug(title + " is in progress: " + pyrepr.Repr(body))
	if len(diff) > 0 && old != nil && essence != nil {
		log.Debug(title + " diff: " + reprDiff(diff))
	}
}

// reprDiff renders a diff as Kopf's repr() of its diff: a tuple of
// (operation, field path, old, new) tuples.
func reprDiff(d diffbase.Diff) string {
	items := make(pyrepr.Tuple, len(d))
	for i, it := range d {
		path := make(pyrepr.Tuple, len(it.Path))
		for j, k := range it.Path {
			path[j] = k
		}
		items[i] = pyrepr.Tuple{string(it.Op), path, it.Old, it.New}
	}
	return pyrepr.Repr(items)
}

// logPatch logs a patch at debug level, encoding it only when that level is
// on: it happens for every write.
func logPatch(ctx context.Context, log *slog.Logger, pt *patch.Patch) {
	if log.Enabled(ctx, slog.LevelDebug) {
		log.Debug("Patching with: " + mustJSON(pt))
	}
}

func mustJSON(p *patch.Patch) string {
	b, err := p.MarshalJSON()
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}
