package reactor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/handlers"
	"github.com/kopfgo/kopfgo/indexing"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// Config is what the reactor needs to run an operator.
type Config struct {
	Registry   *handlers.Registry
	Settings   config.Settings // with defaults applied
	REST       *rest.Config
	Namespaces []string // empty: cluster-wide
	Logger     *slog.Logger
	Clock      clock.WithTicker
	// Client talks to the API; nil builds one from REST. Tests inject fakes.
	Client *kube.Client
	// Limiter caps concurrent handler invocations (Execution.MaxWorkers);
	// nil means no cap.
	Limiter chan struct{}
	// Indexers maintain the operator's indices from watch events.
	Indexers []indexing.Runner
	// Memo is the operator's memo, copied into every object's memo when
	// the object first appears (K1-221). Nil: objects start empty.
	Memo *handlers.Memo
	// Ready, when set, holds every handler until it is closed: until all
	// indices have seen the initial listings (K1-239). Run sets it.
	Ready <-chan struct{}
}

// Run serves every resource the registered handlers select until ctx ends,
// and returns after every goroutine it started has stopped.
func Run(ctx context.Context, cfg Config) error {
	client := cfg.Client
	if client == nil {
		var err error
		if client, err = kube.NewClient(cfg.REST); err != nil {
			return err
		}
	}
	served, err := resolve(ctx, client, cfg.Registry, cfg.Indexers, cfg.Logger)
	if err != nil {
		return err
	}
	if n := cfg.Settings.Execution.MaxWorkers; n > 0 {
		cfg.Limiter = make(chan struct{}, n)
	}
	// Plain names are watched one by one; patterns are served by a
	// cluster-wide watch filtered here. (Watching each matching namespace as
	// namespaces come and go is the scope work of a later change.)
	scope := resources.NewNamespaces(cfg.Namespaces)
	namespaces, exact := scope.Exact()
	if !exact {
		namespaces = []string{metav1.NamespaceAll}
	}

	ctx, cancel := context.WithCancel(kube.WithConfig(ctx, cfg.REST))
	defer cancel()
	var (
		wg      sync.WaitGroup
		indexed sync.WaitGroup // watchers whose indexers have not seen the initial listing yet
		ready   = make(chan struct{})
	)
	if len(cfg.Indexers) > 0 {
		cfg.Ready = ready
	}
	for _, res := range served {
		hs := handlers.ForResource(cfg.Registry.Changing(), res)
		evs := handlers.EventsFor(cfg.Registry.Events(), res)
		ixs := indexersFor(cfg.Indexers, res)
		nss := namespaces
		if !res.Namespaced {
			nss = []string{metav1.NamespaceAll}
		}
		for _, ns := range nss {
			w := newWatcher(cfg, client, res, ns, hs, scope)
			w.events, w.indexers = evs, ixs
			if len(ixs) > 0 {
				indexed.Add(1)
				w.indexed = sync.OnceFunc(indexed.Done)
			}
			wg.Go(func() { w.run(ctx) })
		}
	}
	if cfg.Ready != nil {
		wg.Go(func() {
			indexed.Wait()
			if ctx.Err() == nil {
				cfg.Logger.Debug("All indices are populated from the initial listings.")
			}
			close(ready)
		})
	}
	cfg.Logger.Info(fmt.Sprintf("Serving %s.", describe(served)))
	<-ctx.Done()
	wg.Wait()
	return nil
}

func indexersFor(all []indexing.Runner, res resources.Resource) []indexing.Runner {
	var out []indexing.Runner
	for _, ix := range all {
		if ix.Spec().Selector.Matches(res) {
			out = append(out, ix)
		}
	}
	return out
}

// resolve turns the handlers' selectors into discovered resources. A
// selector that matches nothing, or matches resources of several groups, is
// an error naming its handlers: nothing would ever call them.
func resolve(ctx context.Context, client *kube.Client, reg *handlers.Registry, indexers []indexing.Runner, log *slog.Logger) ([]resources.Resource, error) {
	all, err := client.Discover(ctx)
	if err != nil {
		if len(all) == 0 {
			return nil, err
		}
		log.Warn(fmt.Sprintf("Some API groups cannot be discovered and are skipped: %v", err))
	}
	var (
		out  []resources.Resource
		errs []error
		seen = map[string]bool{}
	)
	selectors := reg.Selectors()
	for _, ix := range indexers {
		if !slices.Contains(selectors, ix.Spec().Selector) {
			selectors = append(selectors, ix.Spec().Selector)
		}
	}
	for _, sel := range selectors {
		found, err := sel.Select(all)
		if err != nil {
			names := reg.Names(sel)
			for _, ix := range indexers {
				if ix.Spec().Selector == sel {
					names = append(names, ix.Spec().ID)
				}
			}
			errs = append(errs, fmt.Errorf("%w: handlers %s: %w", handlers.ErrRegistration, strings.Join(names, ", "), err))
			continue
		}
		for _, r := range found {
			if !seen[r.String()] {
				seen[r.String()] = true
				out = append(out, r)
			}
		}
	}
	return out, errors.Join(errs...)
}

func describe(rs []resources.Resource) string {
	var names []string
	for _, r := range rs {
		names = append(names, r.String())
	}
	return strings.Join(names, ", ")
}

// watcher serves one resource in one namespace (or all).
type watcher struct {
	cfg       Config
	client    *kube.Client
	res       resources.Resource
	namespace string
	handlers  []*handlers.Handler
	scope     resources.Namespaces
	events    []*handlers.EventHandler
	indexers  []indexing.Runner
	// indexed, when set, is called once the indexers have seen the initial
	// listing (or the watcher gives up).
	indexed func()
}

func newWatcher(cfg Config, client *kube.Client, res resources.Resource, ns string, hs []*handlers.Handler, scope resources.Namespaces) *watcher {
	return &watcher{cfg: cfg, client: client, res: res, namespace: ns, handlers: hs, scope: scope}
}

func (w *watcher) run(ctx context.Context) {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(w.client.Dynamic, 0, w.namespace, nil)
	informer := factory.ForResource(w.res.GVR()).Informer()
	p := newProcessor(w.cfg, w.client, w.res, w.handlers, informer.GetStore())
	p.events, p.indexers = w.events, w.indexers
	if w.res.Namespaced {
		p.scope = w.scope.Match
	}
	if w.indexed != nil {
		defer w.indexed() // never leave the other handlers waiting
	}
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			typ := handlers.EventAdded
			if initial {
				typ = handlers.EventListed
			}
			p.observe(ctx, obj, typ, initial, false)
		},
		UpdateFunc: func(_, obj any) {
			p.observe(ctx, obj, handlers.EventModified, false, false)
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			p.observe(ctx, obj, handlers.EventDeleted, false, true)
		},
	})
	if err != nil {
		w.cfg.Logger.Error(fmt.Sprintf("Cannot watch %s: %v", w.res, err))
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { informer.RunWithContext(ctx) })
	if w.indexed != nil {
		// The handler's registration has synced once every object of the
		// initial listing has passed through observe, indexers included.
		cache.WaitForCacheSync(ctx.Done(), reg.HasSynced)
		w.indexed()
	}
	<-ctx.Done()
	wg.Wait()
	p.wait()
}
