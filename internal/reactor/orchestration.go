package reactor

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
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

// orchestrator keeps one watcher running per served resource and namespace,
// and follows the cluster: CRDs that appear, change versions or go away
// start and stop watchers without a restart (compat: watching-new-crds).
type orchestrator struct {
	*run
	ctx   context.Context
	wg    *sync.WaitGroup
	scope resources.Namespaces
	nss   []string

	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
	// labelling are the labellers of the served resources while this
	// replica coordinates a sharding (labeller.go), by watch key.
	labelling map[string]context.CancelCauseFunc
	// served are the resources to serve; while paused (Config.Pause),
	// none is watched, and they are watched again on resuming.
	served []resources.Resource
	paused bool
	// period is the Pause's paused period last reported halted.
	period uint64
	// exited is closed when the key's latest watcher has stopped, its
	// daemons included: a watcher started again for the key (a resource
	// that seemed gone while the API server restarted) waits for it, or
	// each object's daemon would run twice at once.
	exited map[string]chan struct{}
	// gating: the watchers being started hold the handlers until their
	// indexers have seen the initial listings (watcher.go); indexed
	// counts those that have not yet; gated is closed when the gating
	// ends, after the first watchers have started.
	gating  bool
	indexed sync.WaitGroup
	gated   chan struct{}
}

func newOrchestrator(ctx context.Context, r *run, wg *sync.WaitGroup) *orchestrator {
	// Plain names are watched one by one; patterns are served by a
	// cluster-wide watch filtered by the watcher, so that namespaces
	// created later are served too.
	scope := resources.NewNamespaces(r.Namespaces)
	nss, exact := scope.Exact()
	if !exact {
		nss = []string{metav1.NamespaceAll}
	}
	return &orchestrator{run: r, ctx: ctx, wg: wg, scope: scope, nss: nss, running: map[string]context.CancelCauseFunc{}, labelling: map[string]context.CancelCauseFunc{}, exited: map[string]chan struct{}{}, gating: r.ready != nil, gated: make(chan struct{}),
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
		paused, period, changed := o.Pause.Period()
		o.mu.Lock()
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
		if paused && period != o.period {
			o.period = period
			o.halted(period)
		}
		o.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// halted reports to the Pause, once every watcher stopped so far has
// exited (its handlers, daemons and timers included), that the reactor has
// halted for the paused period: sharding releases a shard's Lease only
// then. The caller holds o.mu.
func (o *orchestrator) halted(period uint64) {
	var waits []chan struct{}
	for _, done := range o.exited {
		waits = append(waits, done)
	}
	o.wg.Go(func() {
		for _, done := range waits {
			select {
			case <-done:
			case <-o.ctx.Done():
				return
			}
		}
		o.Pause.Halted(period)
	})
}

// reconcile starts and stops watchers so that those running are the served
// resources', or none while paused. The caller holds o.mu.
func (o *orchestrator) reconcile() {
	want := map[string]bool{}
	var started []string
	served := o.served
	if o.paused {
		served = nil
	}
	// The shards served change only while paused and halted: a watcher
	// started serves the set read here until it stops.
	var set *replicas.ShardSet
	if o.Shards != nil && !o.paused {
		s := o.Shards()
		set = &s
		if len(s.Held) == 0 {
			served = nil // a replica without shards stands by; this is only a guard
		}
	}
	labels := map[string]bool{}
	for _, res := range served {
		for _, ns := range o.namespaces(res) {
			key := res.String() + "@" + ns
			want[key] = true
			if set != nil && set.Coordinates() {
				labels[key] = true
				o.label(key, res, ns, *set)
			}
			if _, ok := o.running[key]; ok {
				continue
			}
			ctx, cancel := context.WithCancelCause(o.ctx)
			o.running[key] = cancel
			var gate *sync.WaitGroup
			if o.gating {
				gate = &o.indexed
			}
			w := newWatcher(o.run, res, ns, o.scope, gate, set)
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
			if ns == "" || len(started) == 0 || started[len(started)-1] != res.String() {
				started = append(started, res.String())
			}
		}
	}
	for key, cancel := range o.running {
		if !want[key] {
			if o.paused {
				cancel(handlers.ErrOperatorPausing)
			} else {
				o.Logger.Info(fmt.Sprintf("Stopped serving %s: the resource is gone.", key))
				cancel(handlers.ErrResourceDeleted)
			}
			delete(o.running, key)
		}
	}
	for key, cancel := range o.labelling {
		if !labels[key] {
			cancel(handlers.ErrOperatorPausing)
			delete(o.labelling, key)
		}
	}
	if o.paused {
		return
	}
	if o.gating {
		o.gating = false
		close(o.gated)
	}
	for _, s := range started {
		o.Logger.Info(fmt.Sprintf("Serving %s.", s))
	}
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

// described is a watch's key ("resource@namespace") in Kopf's wording:
// "resource in 'ns'" or "resource cluster-wide".
func described(key string) string {
	i := strings.LastIndex(key, "@")
	return key[:i] + " " + where(key[i+1:])
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
