package reactor

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/kube"
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
	running map[string]context.CancelFunc
	// exited is closed when the key's latest watcher has stopped, its
	// daemons included: a watcher started again for the key (a resource
	// that seemed gone while the API server restarted) waits for it, or
	// each object's daemon would run twice at once.
	exited map[string]chan struct{}
	// gating: the watchers being started hold the handlers until their
	// indexers have seen the initial listings (watcher.go); indexed
	// counts those that have not yet.
	gating  bool
	indexed sync.WaitGroup
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
	return &orchestrator{run: r, ctx: ctx, wg: wg, scope: scope, nss: nss, running: map[string]context.CancelFunc{}, exited: map[string]chan struct{}{}, gating: r.ready != nil}
}

// stopGating ends the gating after the first serve, and returns what counts
// its watchers' indexing.
func (o *orchestrator) stopGating() *sync.WaitGroup {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gating = false
	return &o.indexed
}

// serve makes the running watchers match the served resources.
func (o *orchestrator) serve(served []resources.Resource) {
	o.mu.Lock()
	defer o.mu.Unlock()
	want := map[string]bool{}
	var started []string
	for _, res := range served {
		nss := o.nss
		if !res.Namespaced {
			nss = []string{metav1.NamespaceAll}
		}
		for _, ns := range nss {
			key := res.String() + "@" + ns
			want[key] = true
			if _, ok := o.running[key]; ok {
				continue
			}
			ctx, cancel := context.WithCancel(o.ctx)
			o.running[key] = cancel
			var gate *sync.WaitGroup
			if o.gating {
				gate = &o.indexed
			}
			w := newWatcher(o.run, res, ns, o.scope, gate)
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
			o.Logger.Info(fmt.Sprintf("Stopped serving %s: the resource is gone.", key))
			cancel()
			delete(o.running, key)
		}
	}
	for _, s := range started {
		o.Logger.Info(fmt.Sprintf("Serving %s.", s))
	}
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
		if ctx.Err() == nil && !warned {
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
		served, unresolved, err := resolve(ctx, o.client, o.Registry, o.Indexers, quiet, false)
		if err != nil {
			if ctx.Err() == nil {
				o.Logger.Warn(fmt.Sprintf("Cannot rescan the cluster's resources: %v", err))
			}
			continue
		}
		o.serve(served)
		late := defined(unresolved, informer.GetStore().List())
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
