package reactor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/indexing"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/logging"
	"github.com/kopfgo/kopfgo/internal/posting"
	"github.com/kopfgo/kopfgo/internal/pyrepr"
	"github.com/kopfgo/kopfgo/internal/replicas"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/internal/tracing"
	"github.com/kopfgo/kopfgo/patch"
)

// watcher serves one resource in one namespace (or all): its informer
// observes the objects, and each object's worker handles it.
//
// Per observation, in Kopf's order (compat: handlers-order): the indexers see it first, in
// the informer's callback, so that whatever runs next sees indices that
// include it; then the object's worker runs the watching handlers (On.Event)
// for every queued observation, and only then a pass for the latest state.
// Changing handlers are level-based and see the latest state only; watching
// handlers are not, and see each observation.
type watcher struct {
	*run
	res       resources.Resource
	resName   string // res as the logs and the metrics name it
	key       string // the watch's, as the hooks name it (orchestrator.watches)
	namespace string
	// scope filters objects by namespace when the watch is wider than the
	// operator's scope (namespace patterns); nil serves all.
	scope func(namespace string) bool

	changing []*handling.Handler      // create, update, delete, resume, field
	watching []*handling.EventHandler // On.Event: every observation
	indexers []indexing.Indexer
	// globalIndexers are the indexers that also see the objects of other
	// replicas' shards (kopfgo.Global).
	globalIndexers []indexing.Indexer
	// shardLabel, when set, is the label of the shards of a watch of
	// every object (sharding with global indices, shardserving.go): it
	// serves the objects of the shards in serving, and the others' are
	// only indexed globally. "": the watch selects the objects served.
	shardLabel string
	// shardMu orders the watch's observations against the changes of
	// serving, which it guards.
	shardMu sync.Mutex
	serving map[int]*served
	// stopped are the done channels of each shard's latest serving.
	stopped  map[int]chan struct{}
	spawning []*handling.Spawning // daemons and timers (background.go)
	// idleTimers: some timers idle, so essential changes are tracked.
	idleTimers bool
	// detector works out what happened to an object for the changing
	// handlers (the read of a pass).
	detector *handling.Detector
	// kept is what the operator keeps on the objects (progress records,
	// diff-base) for the passes' cycles and patches.
	kept handling.Store
	// indexed, when set, is called once the indexers have seen the initial
	// listing (or the watcher gives up).
	indexed func()
	// conditions: the handling cycles keep the framework's
	// status.conditions on the objects (conditionsOn).
	conditions bool

	informer cache.SharedIndexInformer
	store    cache.Store   // the informer's: the latest state of each object
	pool     *pool         // carries the passes (worker.go)
	rate     *rate.Limiter // Queueing.ResourceRate; nil: no cap

	mu      sync.Mutex
	workers map[string]*worker
	states  map[string]*state
	wg      sync.WaitGroup
}

// newWatcher makes the watcher of res in ns (or all namespaces); gate, when
// set and the resource has indexers, counts the watcher until they have seen
// the initial listing. set, when sharding, are the shards it serves.
func newWatcher(r *run, res resources.Resource, ns string, scope resources.Namespaces, gate *sync.WaitGroup, set *replicas.ShardSet) *watcher {
	w := &watcher{
		run: r, res: res, resName: res.String(), namespace: ns, key: res.String() + "@" + ns,
		changing: handling.ForResource(r.Registry.Changing(), res),
		watching: handling.EventsFor(r.Registry.Events(), res),
		indexers: indexersFor(r.Indexers, res),
		spawning: handling.ForResource(r.Registry.Spawning(), res),
		pool:     newPool(),
		rate:     r.rateOf(res),
		workers:  map[string]*worker{},
		states:   map[string]*state{},
	}
	w.detector = handling.NewDetector(w.changing, &r.Settings.Persistence)
	w.kept = handling.StoreOf(&r.Settings.Persistence)
	w.conditions = conditionsOn(r.Settings.Persistence.Conditions, res)
	w.globalIndexers = slices.DeleteFunc(slices.Clone(w.indexers), func(ix indexing.Indexer) bool { return !ix.Spec().Global })
	for _, h := range w.spawning {
		w.idleTimers = w.idleTimers || h.Idle > 0
	}
	if res.Namespaced {
		w.scope = scope.Match
	}
	if gate != nil && len(w.indexers) > 0 {
		gate.Add(1)
		w.indexed = sync.OnceFunc(gate.Done)
	}
	var selector string
	if set != nil {
		if len(w.globalIndexers) > 0 {
			// Global indices see every object: the watch is whole, and
			// reshard says which shards it serves.
			w.shardLabel, w.serving, w.stopped = set.Label, map[int]*served{}, map[int]chan struct{}{}
		} else {
			selector = set.Selector()
		}
	}
	watching := r.Settings.Watching
	lw := r.client.ListWatch(res, ns, kube.WatchOptions{
		ServerTimeout: watching.ServerTimeout, InactivityTimeout: watching.InactivityTimeout,
		ClientTimeout: watching.ClientTimeout, KeepManagedFields: watching.KeepManagedFields, Clock: r.Clock,
		Compact: true, LabelSelector: selector,
		OnInactive: func() {
			// Routine on an idle cluster: Kopf says so at DEBUG.
			r.Logger.Debug(fmt.Sprintf("Watch-stream for %s %s is inactive, reconnecting.", res, w.where()))
		},
	})
	w.informer = cache.NewSharedIndexInformer(lw, &kube.Compact{}, 0, cache.Indexers{})
	w.store = w.informer.GetStore()
	return w
}

// where is Kopf's wording of the watch's scope: "in 'ns'" (a Python repr)
// or "cluster-wide".
func (w *watcher) where() string { return where(w.namespace) }

func where(namespace string) string {
	if namespace != "" {
		return "in " + pyrepr.Repr(namespace)
	}
	return "cluster-wide"
}

// watch runs the informer until ctx ends, then joins the workers.
func (w *watcher) watch(ctx context.Context) {
	// Kopf's lines, with the shard when the watch is one shard's.
	w.Logger.Debug(fmt.Sprintf("Starting the watch-stream for %s.", described(w.key)))
	defer w.Logger.Debug(fmt.Sprintf("Stopping the watch-stream for %s.", described(w.key)))
	_ = w.informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		w.watchError(ctx, err)
	})
	if w.indexed != nil {
		defer w.indexed() // never leave the other handlers waiting
	}
	resName := w.resName
	reg, err := w.informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			typ, label := handlers.EventAdded, string(handlers.EventAdded)
			if initial {
				typ, label = handlers.EventListed, listedLabel
			}
			w.hooks().WatchEvent(resName, label) // hook: watch events
			w.observe(ctx, obj, typ, initial, false)
		},
		UpdateFunc: func(_, obj any) {
			w.hooks().WatchEvent(resName, string(handlers.EventModified))
			w.observe(ctx, obj, handlers.EventModified, false, false)
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			w.hooks().WatchEvent(resName, string(handlers.EventDeleted))
			w.observe(ctx, obj, handlers.EventDeleted, false, true)
		},
	})
	if err != nil {
		w.Logger.Error(fmt.Sprintf("Cannot watch %s: %v", w.res, err))
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { w.informer.RunWithContext(ctx) })
	wg.Go(func() {
		if cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
			w.hooks().WatchSynced(w.key) // hook: readiness
		}
	})
	if w.indexed != nil {
		// The handler's registration has synced once every object of the
		// initial listing has passed through observe, indexers included.
		cache.WaitForCacheSync(ctx.Done(), reg.HasSynced)
		w.indexed()
	}
	<-ctx.Done()
	wg.Wait()
	w.stop(ctx)
	if errors.Is(context.Cause(ctx), errShardMoved) {
		w.forget(ctx)
	}
}

// forget takes the objects of a shard handed to another replica out of the
// replica's own indices: they are that replica's now, and they come back
// here with the shard's listing if it does (an index of this replica holds
// its shards' objects only, once each). The global indices keep them: a
// watch of every object (a resource with a global index) stops only when no
// shard is left, and forgets the objects it served.
func (w *watcher) forget(ctx context.Context) {
	own := w.localIndexers()
	if len(own) == 0 {
		return
	}
	w.shardMu.Lock()
	defer w.shardMu.Unlock()
	for _, obj := range w.store.List() {
		c, ok := obj.(*kube.Compact)
		if !ok {
			continue
		}
		u, err := c.Decode()
		if err != nil {
			continue
		}
		if w.shardLabel != "" && w.servingOf(u.GetLabels()) == nil {
			continue // another replica's
		}
		w.unindex(ctx, u, own)
	}
}

// unindex feeds the indexers ixs the deletion of an object that leaves
// them.
func (w *watcher) unindex(ctx context.Context, u *unstructured.Unstructured, ixs []indexing.Indexer) {
	ob := indexing.Observation{Deleted: true, Now: w.Clock.Now(), Cause: &handling.Cause{
		Body: u.Object, Resource: w.res, Patch: &patch.Patch{}, Logger: w.localLogger(u),
	}}
	for _, ix := range ixs {
		ix.Observe(ctx, ob)
	}
}

// watchError reports a failed list or watch; client-go retries it with its
// backoff. A 403 is the operator's RBAC missing list or watch, which only a
// human can fix, so it says exactly what to grant; the end of a stream
// (expired versions, a restarted apiserver) is routine and logged quietly.
func (w *watcher) watchError(ctx context.Context, err error) {
	if ctx.Err() == nil {
		w.hooks().WatchRestart(w.res.String()) // hook: watch restarts
	}
	where := w.where()
	switch {
	case ctx.Err() != nil:
	case apierrors.IsForbidden(err):
		w.Logger.Error(fmt.Sprintf("The operator may not list or watch %s %s; grant it the \"list\" and \"watch\" verbs on %q in its RBAC: %v",
			w.res, where, w.res.Plural+"."+w.res.Group, err))
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		w.Logger.Debug(fmt.Sprintf("Restarting the watch-stream for %s %s.", w.res, where))
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		w.Logger.Debug(fmt.Sprintf("The watch of %s %s has ended (%v); watching again.", w.res, where, err))
	default:
		w.Logger.Log(ctx, levelOf(err, slog.LevelWarn), fmt.Sprintf("Cannot watch %s %s, retrying: %v", w.res, where, err))
	}
}

// globallyIndexed: some of the resource's indexers are global
// (kopfgo.Global), so its watch sees every object when sharding.
func globallyIndexed(all []indexing.Indexer, res resources.Resource) bool {
	return slices.ContainsFunc(indexersFor(all, res), func(ix indexing.Indexer) bool { return ix.Spec().Global })
}

func indexersFor(all []indexing.Indexer, res resources.Resource) []indexing.Indexer {
	var out []indexing.Indexer
	for _, ix := range all {
		if ix.Spec().Selector.Matches(res) {
			out = append(out, ix)
		}
	}
	return out
}

// observation is one watch notification of an object, queued for the
// watching handlers. ("Event" is kept for Kubernetes Events.)
type observation struct {
	typ   handlers.EventType
	obj   *unstructured.Unstructured
	state *state // of the object as the observation saw it
}

// observe is the informer's callback for every observation of every object.
// The store keeps objects compact (kube.Compact); an observation is decoded
// only for those who see every observation (indexers, watching handlers)
// and for the goodbye to a deleted object; passes decode the latest state.
func (w *watcher) observe(ctx context.Context, obj any, typ handlers.EventType, initial, deleted bool) {
	c, ok := obj.(*kube.Compact)
	if !ok {
		return
	}
	if w.scope != nil && !w.scope(c.Namespace) {
		return
	}
	var u *unstructured.Unstructured
	if w.shardLabel != "" {
		// A watch of every object, for the global indices: they alone see
		// the objects of other replicas' shards, and of none yet.
		var err error
		if u, err = c.Decode(); err != nil {
			w.Logger.Error(fmt.Sprintf("Cannot read an observation of %s: %v", w.res, err))
			return
		}
		w.shardMu.Lock()
		defer w.shardMu.Unlock()
		sv := w.servingOf(u.GetLabels())
		if sv == nil {
			w.indexForeign(ctx, u, deleted)
			return
		}
		ctx = sv.ctx // its shard's work stops alone
	}
	w.serve(ctx, c, u, w.indexers, typ, initial, deleted)
}

// serve passes an observation of an object served (c; u decoded, or nil)
// to the indexers ixs and to its worker.
func (w *watcher) serve(ctx context.Context, c *kube.Compact, u *unstructured.Unstructured, ixs []indexing.Indexer, typ handlers.EventType, initial, deleted bool) {
	if u == nil && (len(ixs) > 0 || len(w.watching) > 0 || (deleted && len(w.changing) > 0)) {
		var err error
		if u, err = c.Decode(); err != nil {
			w.Logger.Error(fmt.Sprintf("Cannot read an observation of %s: %v", w.res, err))
			return
		}
	}
	if len(ixs) > 0 {
		w.index(ctx, u, ixs, deleted)
	}
	if w.indexersOnly() {
		return // no worker needed
	}
	var ob *observation
	if len(w.watching) > 0 {
		ob = &observation{typ: typ, obj: u}
	}
	w.notify(ctx, c, u, initial, deleted, ob)
}

// latest is the object's latest state as the informer's store has it,
// decoded (a new body each time), and whether the store has it.
func (w *watcher) latest(key string) (*unstructured.Unstructured, bool) {
	obj, exists, err := w.store.GetByKey(key)
	if err != nil || !exists {
		return nil, false
	}
	u, err := obj.(*kube.Compact).Decode()
	if err != nil {
		w.Logger.Error(fmt.Sprintf("Cannot read the latest state of %s %s: %v", w.res, key, err))
		return nil, false
	}
	return u, true
}

// indexersOnly: the resource has indexers and no handlers that need a
// worker.
func (w *watcher) indexersOnly() bool {
	return len(w.changing) == 0 && len(w.watching) == 0 && len(w.spawning) == 0
}

// index feeds one observation to the indexers ixs. It runs in the
// informer's callback: indexers must be fast, and they never wait for a
// worker, so that no limit on workers can deadlock the startup (compat: indices-worker-limit).
func (w *watcher) index(ctx context.Context, u *unstructured.Unstructured, ixs []indexing.Indexer, deleted bool) {
	key, err := cache.MetaNamespaceKeyFunc(u)
	if err != nil {
		return
	}
	uid := string(u.GetUID())
	w.mu.Lock()
	st := w.stateLocked(key, uid, servedIn(ctx))
	if deleted && w.indexersOnly() {
		delete(w.states, key) // no worker's notify forgets it
	}
	w.mu.Unlock()

	ob := indexing.Observation{
		Deleted: deleted,
		Cause: &handling.Cause{
			Body: u.Object, Resource: w.res, Patch: &patch.Patch{}, // never applied, as in Kopf
			Logger: w.localLogger(u), Memo: st.memo,
		},
		Now:            w.Clock.Now(),
		DefaultBackoff: w.Settings.Execution.DefaultBackoff,
	}
	hctx := w.handlerContext(ctx)
	for _, ix := range ixs {
		ix.Observe(hctx, ob)
	}
}

// indexForeign feeds an object of another replica's shard to the global
// indices. The replica keeps no state of such objects: each observation
// gets a fresh copy of the operator's memo.
func (w *watcher) indexForeign(ctx context.Context, u *unstructured.Unstructured, deleted bool) {
	memo := &handlers.Memo{}
	if w.Memo != nil {
		memo = w.Memo.Copy()
	}
	ob := indexing.Observation{
		Deleted: deleted,
		Cause: &handling.Cause{
			Body: u.Object, Resource: w.res, Patch: &patch.Patch{}, // never applied, as in Kopf
			Logger: w.localLogger(u), Memo: memo,
		},
		Now:            w.Clock.Now(),
		DefaultBackoff: w.Settings.Execution.DefaultBackoff,
	}
	hctx := w.handlerContext(ctx)
	for _, ix := range w.globalIndexers {
		ix.Observe(hctx, ob)
	}
}

// eventCause is the cause the metrics give event handlers' calls.
const eventCause = causes.Reason("event")

// observeHandler tells the hooks of the calls of a cycle's handlers on an
// object in the namespace (handling.Cycle.Observe).
func (w *watcher) observeHandler(namespace string) func(string, causes.Reason, error, int, time.Duration) {
	return func(id string, reason causes.Reason, err error, retry int, d time.Duration) {
		w.hooks().Handler(HandlerCall{Resource: w.resName, Namespace: namespace, ID: id, Reason: reason, Err: err, Retry: retry}, d)
	}
}

// listedLabel is the watch event type the metrics give the objects of the
// initial listing, whose raw event type is None in Kopf ("" in kopfgo).
const listedLabel = "LISTED"

// dispatch runs the watching handlers for the observations queued since the
// last pass, in their order.
func (w *watcher) dispatch(ctx context.Context, wk *worker) {
	w.mu.Lock()
	obs := wk.queued
	wk.queued = nil
	w.mu.Unlock()
	if len(obs) > 0 {
		ctx = w.acting(ctx)
	}
	hctx := w.handlerContext(ctx)
	for _, ob := range obs {
		if ctx.Err() != nil {
			return
		}
		u := ob.obj
		log := w.localLogger(u)
		pt := &patch.Patch{}
		handling.HandleEvent(hctx, w.watching, ob.typ, &handling.Cause{
			Body: u.Object, Resource: w.res, Patch: pt, Logger: log, Memo: ob.state.memo,
		}, func(id string, err error, d time.Duration) {
			w.hooks().Handler(HandlerCall{Resource: w.resName, Namespace: u.GetNamespace(), ID: id, Reason: eventCause, Err: err}, d) // hook: handler invocations
		})
		// Results and patches of watching handlers are applied as Kopf
		// does, except for a deleted object, which has nothing left to patch.
		if !pt.IsEmpty() && ob.typ != handlers.EventDeleted {
			w.apply(ctx, u, ob.state, log, pt)
		}
	}
}

// waitIndexed holds a worker until every index has seen the initial
// listings (compat: indices-complete); false if the operator stops meanwhile.
func (w *watcher) waitIndexed(ctx context.Context) bool {
	if w.ready == nil {
		return true
	}
	select {
	case <-w.ready:
		return true
	case <-ctx.Done():
		return false
	}
}

// objectLogger is the object's logger for passes: with
// Settings.Posting.Loggers, its messages also become Kubernetes Events.
func (w *watcher) objectLogger(u *unstructured.Unstructured) *slog.Logger {
	ref := posting.Ref{
		APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Name: u.GetName(),
		UID: string(u.GetUID()), Namespace: u.GetNamespace(),
	}
	return w.poster.Logger(logging.WithObject(w.Logger, logging.ObjectRef(ref)), ref)
}

// localLogger is the object's logger that never posts Kubernetes Events:
// watching handlers and indexers log only locally, as in Kopf (compat: handlers-event, indices-logging).
func (w *watcher) localLogger(u *unstructured.Unstructured) *slog.Logger {
	return logging.WithObject(w.Logger, logging.ObjectRef{
		APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Name: u.GetName(),
		UID: string(u.GetUID()), Namespace: u.GetNamespace(),
	})
}

// handlerContext is the context handlers run in: the one Run gives them,
// which outlives the operator's stop by Queueing.ExitTimeout and carries
// what kopfgo.RESTConfig and kopfgo.Info need.
func (w *watcher) handlerContext(ctx context.Context) context.Context {
	if w.handlerCtx != nil {
		if w.Tracer != nil { // the pass's span goes along
			return tracing.Within(w.handlerCtx, ctx)
		}
		return w.handlerCtx
	}
	return ctx
}
