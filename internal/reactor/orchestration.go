package reactor

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/replicas"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// orchestrator keeps one watcher running per served resource and namespace
// (and shard, when sharding: watches), and follows the cluster: CRDs that
// appear, change versions or go away start and stop watchers without a
// restart (compat: watching-new-crds).
type orchestrator struct {
	*run
	ctx   context.Context
	wg    *sync.WaitGroup
	scope resources.Namespaces
	nss   []string

	mu      sync.Mutex
	running map[string]running
	// labelling are the labellers of the served resources while this
	// replica coordinates a sharding (labeller.go), by watch key.
	labelling map[string]context.CancelCauseFunc
	// served are the resources to serve; while paused (Config.Pause),
	// none is watched, and they are watched again on resuming.
	served []resources.Resource
	paused bool
	// version is the version of the shards served (Config.Shards) last
	// followed, and reported halted once its stopped watchers exit.
	version uint64
	// exited is closed when the key's latest watcher has stopped, its
	// daemons included: a watcher started again for the key (a resource
	// that seemed gone while the API server restarted) waits for it, or
	// each object's daemon would run twice at once.
	exited map[string]chan struct{}
	// stopped are the exits of the watchers and labellers stopped, until
	// a report of a halt (halted) has seen them closed.
	stopped []chan struct{}
	// gating: the watchers being started hold the handlers until their
	// indexers have seen the initial listings (watcher.go); indexed
	// counts those that have not yet; gated is closed when the gating
	// ends, after the first watchers have started.
	gating  bool
	indexed sync.WaitGroup
	gated   chan struct{}
}

// running is a watcher that runs, in ctx: serves is the label of the
// shards of a watch of every object, which changes the shards it serves in
// place (watcher.reshard; "": it serves no shards apart).
type running struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	serves string
	w      *watcher
}

// errShardMoved stops the watchers of a shard that this replica no longer
// serves: a pause of that shard only (daemons see ErrOperatorPausing).
var errShardMoved = fmt.Errorf("%w for a shard handed to another replica", handlers.ErrOperatorPausing)

func newOrchestrator(ctx context.Context, r *run, wg *sync.WaitGroup) *orchestrator {
	// Plain names are watched one by one; patterns are served by a
	// cluster-wide watch filtered by the watcher, so that namespaces
	// created later are served too.
	scope := resources.NewNamespaces(r.Namespaces)
	nss, exact := scope.Exact()
	if !exact {
		nss = []string{metav1.NamespaceAll}
	}
	return &orchestrator{run: r, ctx: ctx, wg: wg, scope: scope, nss: nss, running: map[string]running{}, labelling: map[string]context.CancelCauseFunc{}, exited: map[string]chan struct{}{}, gating: r.ready != nil, gated: make(chan struct{}),
		// Paused from the start: nothing is watched until resumed, and
		// follow tells the hooks.
		paused: r.Pause.Paused()}
}

// indexing returns what counts the indexing of the first watchers, once
// they are started (or ctx ends first: nil). The first watchers are those
// of the first serve, or of the resume when the operator starts paused.
func (o *orchestrator) indexing(ctx context.Context) *sync.WaitGroup {
	select {
	case <-o.gated:
		return &o.indexed
	case <-ctx.Done():
		return nil
	}
}

// serve makes the running watchers match the served resources.
func (o *orchestrator) serve(served []resources.Resource) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.served = served
	o.reconcile()
}

// follow pauses and resumes the watchers as Config.Pause flips, until ctx
// ends. A pause stops every watcher as the operator's exit does: handlers in
// flight finish, daemons and timers stop; resuming lists everything afresh,
// so that what became due meanwhile is handled then (compat: peering-priorities).
func (o *orchestrator) follow(ctx context.Context) {
	o.mu.Lock()
	if reasons := o.Pause.Reasons(); o.paused && len(reasons) > 0 {
		for _, key := range o.keys() {
			o.Logger.Debug(fmt.Sprintf("Pausing the watch-stream for %s (blockers: %s).", described(key), strings.Join(reasons, ", ")))
		}
		o.hooks().Paused(reasons) // hook: readiness
	}
	o.mu.Unlock()
	for {
		paused, changed := o.Pause.State()
		var (
			version uint64
			moved   <-chan struct{}
		)
		if o.Shards != nil {
			_, version, moved = o.Shards.State()
		}
		o.mu.Lock()
		if paused == o.paused && version != o.version {
			o.reconcile() // shards handed over: only theirs stop or start
		}
		if paused != o.paused {
			if paused {
				blockers := strings.Join(o.Pause.Reasons(), ", ")
				for _, key := range slices.Sorted(maps.Keys(o.running)) {
					o.Logger.Debug(fmt.Sprintf("Pausing the watch-stream for %s (blockers: %s).", described(key), blockers))
				}
			}
			if !paused {
				// Said before the watchers start, so that it comes before
				// anything they log.
				for _, key := range o.keys() {
					o.Logger.Debug(fmt.Sprintf("Resuming the watch-stream for %s.", described(key)))
				}
			}
			o.paused = paused
			o.reconcile()
			o.hooks().Paused(o.Pause.Reasons()) // hook: readiness
		}
		if version != o.version {
			o.version = version
			o.halted(func() { o.Shards.Halted(version) })
		}
		o.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-moved:
		}
	}
}

// halted reports (report), once every watcher and labeller stopped so far
// has exited (its handlers, daemons and timers included), that the reactor
// has halted the shards taken out of the set served: sharding releases a
// shard's Lease only then. The caller holds o.mu.
func (o *orchestrator) halted(report func()) {
	waits := slices.Clone(o.stopped)
	o.wg.Go(func() {
		for _, done := range waits {
			select {
			case <-done:
			case <-o.ctx.Done():
				return
			}
		}
		report()
	})
}

// reconcile starts and stops watchers so that those running are the served
// resources', or none while paused. The caller holds o.mu.
func (o *orchestrator) reconcile() {
	// The exits seen closed are forgotten, so that pauses without sharding
	// do not pile them up.
	o.stopped = slices.DeleteFunc(o.stopped, func(done chan struct{}) bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
	served := o.served
	if o.paused {
		served = nil
	}
	var set *replicas.ShardSet
	if o.Shards != nil && !o.paused {
		s := o.Shards.Set()
		set = &s
		if len(s.Held) == 0 {
			served = nil // a replica without shards stands by; this is only a guard
		}
	}
	var wanted []watchSpec
	want := map[string]watchSpec{}
	labels := map[string]bool{}
	for _, res := range served {
		for _, ns := range o.namespaces(res) {
			base := res.String() + "@" + ns
			if set != nil && set.Coordinates() {
				labels[base] = true
				o.label(base, res, ns, *set)
			}
			for _, wt := range o.watches(res, ns, set) {
				wanted = append(wanted, wt)
				want[wt.key] = wt
			}
		}
	}
	bases := map[string]bool{} // the watch keys of the resources served, shards or not
	for _, key := range o.keys() {
		bases[key] = true
	}
	for key, r := range o.running {
		if wt, ok := want[key]; ok && wt.serves == r.serves {
			if wt.serves != "" { // the shards handed over stop alone, the others go on
				o.stopped = append(o.stopped, r.w.reshard(r.ctx, wt.set.Held)...)
			}
			continue
		}
		switch {
		case o.paused:
			r.cancel(handlers.ErrOperatorPausing)
		case bases[baseOf(key)]:
			r.cancel(errShardMoved) // the resource is served still, not this shard
		default:
			o.Logger.Info(fmt.Sprintf("Stopped serving %s: the resource is gone.", key))
			r.cancel(handlers.ErrResourceDeleted)
		}
		o.stopped = append(o.stopped, o.exited[key])
		delete(o.running, key)
	}
	for key, cancel := range o.labelling {
		if !labels[key] {
			cancel(handlers.ErrOperatorPausing)
			o.stopped = append(o.stopped, o.exited["labels "+key])
			delete(o.labelling, key)
		}
	}
	if o.paused {
		return
	}
	servedBefore := map[string]bool{}
	for key := range o.running {
		servedBefore[baseOf(key)] = true
	}
	var started []string
	for _, wt := range wanted {
		if _, ok := o.running[wt.key]; ok {
			continue
		}
		o.start(wt)
		name := wt.res.String()
		if !servedBefore[baseOf(wt.key)] && !slices.Contains(started, name) {
			started = append(started, name)
		}
	}
	if o.gating {
		o.gating = false
		close(o.gated)
	}
	for _, s := range started {
		o.Logger.Info(fmt.Sprintf("Serving %s.", s))
	}
}

// watchSpec is one watch of a resource in a namespace: of every object, or of
// the objects of the shards in set.
type watchSpec struct {
	key string // "resource@namespace", "resource@namespace#shard" for one shard
	res resources.Resource
	ns  string
	set *replicas.ShardSet
	// serves is the label of the shards a watch of every object serves
	// apart (a resource with a global index): the shards served change in
	// place. "": a watch of every object without sharding, or of one shard.
	serves string
}

// watches are the watches of a resource in a namespace: one of every
// object without sharding; one per shard served when sharding, so that a
// shard handed over starts and stops alone, and the shards kept are
// neither listed again nor handled twice. A resource with a global index
// has one watch of every object (the others' go to the global indices
// alone), which changes in place which shards it serves (shardserving.go).
func (o *orchestrator) watches(res resources.Resource, ns string, set *replicas.ShardSet) []watchSpec {
	key := res.String() + "@" + ns
	if set == nil {
		return []watchSpec{{key: key, res: res, ns: ns}}
	}
	if globallyIndexed(o.Indexers, res) {
		return []watchSpec{{key: key, res: res, ns: ns, set: set, serves: set.Label}}
	}
	out := make([]watchSpec, 0, len(set.Held))
	for _, i := range set.Held {
		one := *set
		one.Held = []int{i}
		out = append(out, watchSpec{key: key + "#" + strconv.Itoa(i), res: res, ns: ns, set: &one})
	}
	return out
}

// baseOf is a watch key without its shard: "resource@namespace".
func baseOf(key string) string {
	base, _, _ := strings.Cut(key, "#")
	return base
}

// start starts a watch. A watch started again for its key (a resource
// that seemed gone while the API server restarted, a shard served again)
// waits until the previous one has exited, or each object's
// daemon would run twice at once. The caller holds o.mu.
func (o *orchestrator) start(wt watchSpec) {
	key := wt.key
	ctx, cancel := context.WithCancelCause(o.ctx)
	var gate *sync.WaitGroup
	if o.gating {
		gate = &o.indexed
	}
	w := newWatcher(o.run, wt.res, wt.ns, o.scope, gate, wt.set)
	w.key = key
	o.running[key] = running{ctx: ctx, cancel: cancel, serves: wt.serves, w: w}
	if wt.serves != "" {
		w.reshard(ctx, wt.set.Held)
	}
	prev, done := o.exited[key], make(chan struct{})
	o.exited[key] = done
	if prev == nil {
		o.hooks().WatchStarted(key) // hook: readiness
	}
	o.wg.Go(func() {
		defer close(done)
		if prev != nil {
			// The previous watch has stopped (and said so to
			// readiness): this one starts listing only now.
			<-prev
			o.hooks().WatchStarted(key) // hook: readiness
		}
		defer o.hooks().WatchStopped(key)
		w.watch(ctx)
	})
}

// label starts the labeller of a watch key unless it runs. The caller
// holds o.mu.
func (o *orchestrator) label(key string, res resources.Resource, ns string, set replicas.ShardSet) {
	if _, ok := o.labelling[key]; ok {
		return
	}
	ctx, cancel := context.WithCancelCause(o.ctx)
	o.labelling[key] = cancel
	l := newLabeller(o.run, res, ns, o.scope, set)
	done := make(chan struct{})
	o.exited["labels "+key] = done // a halt waits for it too
	o.wg.Go(func() {
		defer close(done)
		l.label(ctx)
	})
}

// namespaces are where a resource is watched: the served namespaces, or
// the whole cluster for cluster-scoped resources and namespace patterns.
func (o *orchestrator) namespaces(res resources.Resource) []string {
	if !res.Namespaced {
		return []string{metav1.NamespaceAll}
	}
	return o.nss
}

// keys are the watches of the served resources, running or not, sorted.
// The caller holds o.mu.
func (o *orchestrator) keys() []string {
	var keys []string
	for _, res := range o.served {
		for _, ns := range o.namespaces(res) {
			keys = append(keys, res.String()+"@"+ns)
		}
	}
	slices.Sort(keys)
	return keys
}

// described is a watch's key ("resource@namespace", "#shard" added when
// sharding) in Kopf's wording: "resource in 'ns'" or "resource
// cluster-wide", then "(shard i)".
func described(key string) string {
	base, shard, sharded := strings.Cut(key, "#")
	i := strings.LastIndex(base, "@")
	out := base[:i] + " " + where(base[i+1:])
	if sharded {
		out += " (shard " + shard + ")"
	}
	return out
}

var crds = resources.Resource{Group: "apiextensions.k8s.io", Version: "v1", Plural: "customresourcedefinitions", Kind: "CustomResourceDefinition"}

// watchCRDs rescans the cluster's resources whenever a CRD changes. The
// rescans run one at a time; changes during a rescan coalesce into one more.
// unresolved are the selectors the first scan left unresolved.
func (o *orchestrator) watchCRDs(ctx context.Context, unresolved []resources.Selector) {
	trigger := make(chan struct{}, 1)
	poke := func() {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	// Selectors left unresolved whose CRDs exist: discovery lags behind
	// CRDs for a moment after the API server starts, so the initial listing
	// of CRDs rescans too, and so do timers until discovery has caught up.
	var lagging atomic.Bool
	lagging.Store(len(unresolved) > 0)
	lw := o.client.ListWatch(crds, "", kube.WatchOptions{
		ServerTimeout: o.Settings.Watching.ServerTimeout, InactivityTimeout: o.Settings.Watching.InactivityTimeout, Clock: o.Clock,
		KeepManagedFields: o.Settings.Watching.KeepManagedFields,
	})
	informer := cache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, cache.Indexers{})
	warned := false
	_ = informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		// Only a 403 is the operator's RBAC, worth a warning; other
		// failures (an outage) client-go retries, and the flow control's
		// gate tells them.
		if ctx.Err() == nil && !warned && apierrors.IsForbidden(err) {
			warned = true
			o.Logger.Warn(fmt.Sprintf("Cannot watch CRDs, so new resources are not served until a restart (grant list/watch on customresourcedefinitions, or set Settings.Scanning.Disabled): %v", err))
		}
	})
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, initial bool) {
			if !initial || lagging.Load() {
				poke()
			}
		},
		UpdateFunc: func(_, _ any) { poke() },
		DeleteFunc: func(any) { poke() },
	})
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { informer.RunWithContext(ctx) })
	var (
		retry    clock.Timer
		attempts int
	)
	defer func() {
		if retry != nil {
			retry.Stop()
		}
	}()
	for {
		var again <-chan time.Time
		if retry != nil {
			again = retry.C()
		}
		select {
		case <-ctx.Done():
			return
		case <-trigger:
		case <-again:
			retry = nil
		}
		found, err := resolve(ctx, o.client, o.Registry, o.Indexers, quiet, false)
		if err != nil {
			if ctx.Err() == nil {
				o.Logger.Log(ctx, levelOf(err, slog.LevelWarn), fmt.Sprintf("Cannot rescan the cluster's resources: %v", err))
			}
			continue
		}
		o.serve(found.served)
		o.hooks().Unresolved(found.missing, !o.Settings.Scanning.ReadyWhileUnresolved) // hook: readiness
		late := defined(found.unresolved, informer.GetStore().List())
		lagging.Store(len(late) > 0)
		if len(late) == 0 {
			attempts = 0
			if retry != nil {
				retry.Stop()
				retry = nil
			}
			continue
		}
		if retry == nil {
			backoffs := o.Settings.Networking.ErrorBackoffs
			d := backoffs[min(attempts, len(backoffs)-1)]
			attempts++
			retry = o.Clock.NewTimer(d)
			o.Logger.Debug(fmt.Sprintf("Discovery does not show %s yet, though CRDs define them; scanning again in %s.", strings.Join(late, ", "), d))
		}
	}
}

// defined returns the selectors (as strings) that some of the CRDs define.
func defined(unresolved []resources.Selector, crds []any) []string {
	var out []string
	for _, sel := range unresolved {
		for _, obj := range crds {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			if found, err := sel.Select(resources.FromCRD(u.Object)); err == nil && len(found) > 0 {
				out = append(out, sel.String())
				break
			}
		}
	}
	return out
}

// quiet is the logger for rescans: the warnings about unresolved resources
// were given at startup and would repeat on every CRD change.
var quiet = slog.New(discard{})

type discard struct{}

func (discard) Enabled(context.Context, slog.Level) bool  { return false }
func (discard) Handle(context.Context, slog.Record) error { return nil }
func (d discard) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discard) WithGroup(string) slog.Handler           { return d }
