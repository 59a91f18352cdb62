package reactor

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/kopfgo/kopfgo/handlers"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// orchestrator keeps one watcher running per served resource and namespace,
// and follows the cluster: CRDs that appear, change versions or go away
// start and stop watchers without a restart (compat: watching-new-crds).
type orchestrator struct {
	ctx    context.Context
	cfg    Config
	client *kube.Client
	wg     *sync.WaitGroup
	scope  resources.Namespaces
	nss    []string

	mu      sync.Mutex
	running map[string]context.CancelFunc
	// gating: the watchers being started hold the handlers until their
	// indexers have seen the initial listings (watching.go); indexed
	// counts those that have not yet.
	gating  bool
	indexed sync.WaitGroup
}

func newOrchestrator(ctx context.Context, cfg Config, client *kube.Client, wg *sync.WaitGroup) *orchestrator {
	// Plain names are watched one by one; patterns are served by a
	// cluster-wide watch filtered in the processor, so that namespaces
	// created later are served too.
	scope := resources.NewNamespaces(cfg.Namespaces)
	nss, exact := scope.Exact()
	if !exact {
		nss = []string{metav1.NamespaceAll}
	}
	return &orchestrator{ctx: ctx, cfg: cfg, client: client, wg: wg, scope: scope, nss: nss, running: map[string]context.CancelFunc{}, gating: cfg.Ready != nil}
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
		hs := handlers.ForResource(o.cfg.Registry.Changing(), res)
		evs := handlers.EventsFor(o.cfg.Registry.Events(), res)
		ixs := indexersFor(o.cfg.Indexers, res)
		for _, ns := range nss {
			key := res.String() + "@" + ns
			want[key] = true
			if _, ok := o.running[key]; ok {
				continue
			}
			ctx, cancel := context.WithCancel(o.ctx)
			o.running[key] = cancel
			w := newWatcher(o.cfg, o.client, res, ns, hs, o.scope)
			w.events, w.indexers = evs, ixs
			if o.gating && len(ixs) > 0 {
				o.indexed.Add(1)
				w.indexed = sync.OnceFunc(o.indexed.Done)
			}
			o.cfg.hooks().WatchStarted(key) // hook: readiness
			o.wg.Go(func() {
				defer o.cfg.hooks().WatchStopped(key)
				w.run(ctx)
			})
			if ns == "" || len(started) == 0 || started[len(started)-1] != res.String() {
				started = append(started, res.String())
			}
		}
	}
	for key, cancel := range o.running {
		if !want[key] {
			o.cfg.Logger.Info(fmt.Sprintf("Stopped serving %s: the resource is gone.", key))
			cancel()
			delete(o.running, key)
		}
	}
	for _, s := range started {
		o.cfg.Logger.Info(fmt.Sprintf("Serving %s.", s))
	}
}

var crds = resources.Resource{Group: "apiextensions.k8s.io", Version: "v1", Plural: "customresourcedefinitions", Kind: "CustomResourceDefinition"}

// watchCRDs rescans the cluster's resources whenever a CRD changes. The
// rescans run one at a time; changes during a rescan coalesce into one more.
func (o *orchestrator) watchCRDs(ctx context.Context) {
	trigger := make(chan struct{}, 1)
	poke := func() {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	lw := o.client.ListWatch(crds, "", kube.WatchOptions{
		ServerTimeout: o.cfg.Settings.Watching.ServerTimeout, InactivityTimeout: o.cfg.Settings.Watching.InactivityTimeout, Clock: o.cfg.Clock,
		KeepManagedFields: o.cfg.Settings.Watching.KeepManagedFields,
	})
	informer := cache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, cache.Indexers{})
	warned := false
	_ = informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if ctx.Err() == nil && !warned {
			warned = true
			o.cfg.Logger.Warn(fmt.Sprintf("Cannot watch CRDs, so new resources are not served until a restart (grant list/watch on customresourcedefinitions, or set Settings.Scanning.Disabled): %v", err))
		}
	})
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, initial bool) {
			if !initial {
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
	for {
		select {
		case <-ctx.Done():
			return
		case <-trigger:
			served, err := resolve(ctx, o.client, o.cfg.Registry, o.cfg.Indexers, quiet(o.cfg), false)
			if err != nil {
				if ctx.Err() == nil {
					o.cfg.Logger.Warn(fmt.Sprintf("Cannot rescan the cluster's resources: %v", err))
				}
				continue
			}
			o.serve(served)
		}
	}
}

// quiet is the logger for rescans: the warnings about unresolved resources
// were given at startup and would repeat on every CRD change.
func quiet(Config) *slog.Logger { return slog.New(discard{}) }

type discard struct{}

func (discard) Enabled(context.Context, slog.Level) bool  { return false }
func (discard) Handle(context.Context, slog.Record) error { return nil }
func (d discard) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discard) WithGroup(string) slog.Handler           { return d }
