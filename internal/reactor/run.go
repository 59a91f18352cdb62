package reactor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/daemons"
	"github.com/kopfgo/kopfgo/handlers"
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
	// Daemons runs the daemons and timers; Run makes it.
	Daemons *daemons.Manager
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
	served, err := resolve(ctx, client, cfg.Registry, cfg.Logger)
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
	cfg.Daemons = daemons.NewManager(ctx, daemons.Config{
		Clock: cfg.Clock, DefaultBackoff: cfg.Settings.Execution.DefaultBackoff, Background: cfg.Settings.Background,
	})
	var wg sync.WaitGroup
	for _, res := range served {
		hs := handlers.ForResource(cfg.Registry.Changing(), res)
		nss := namespaces
		if !res.Namespaced {
			nss = []string{metav1.NamespaceAll}
		}
		for _, ns := range nss {
			w := newWatcher(cfg, client, res, ns, hs, scope)
			wg.Go(func() { w.run(ctx) })
		}
	}
	cfg.Logger.Info(fmt.Sprintf("Serving %s.", describe(served)))
	<-ctx.Done()
	// Daemons stop at once and in parallel with the watchers; each has its
	// own stages, and those that do not exit are abandoned (K1-054).
	cfg.Daemons.Shutdown()
	wg.Wait()
	return nil
}

// resolve turns the handlers' selectors into discovered resources. A
// selector that matches nothing, or matches resources of several groups, is
// an error naming its handlers: nothing would ever call them.
func resolve(ctx context.Context, client *kube.Client, reg *handlers.Registry, log *slog.Logger) ([]resources.Resource, error) {
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
	for _, sel := range reg.Selectors() {
		found, err := sel.Select(all)
		if err != nil {
			var names []string
			for _, h := range reg.Changing() {
				if h.Selector == sel {
					names = append(names, h.ID)
				}
			}
			for _, h := range reg.Spawning() {
				if h.Selector == sel {
					names = append(names, h.ID)
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
}

func newWatcher(cfg Config, client *kube.Client, res resources.Resource, ns string, hs []*handlers.Handler, scope resources.Namespaces) *watcher {
	return &watcher{cfg: cfg, client: client, res: res, namespace: ns, handlers: hs, scope: scope}
}

func (w *watcher) run(ctx context.Context) {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(w.client.Dynamic, 0, w.namespace, nil)
	informer := factory.ForResource(w.res.GVR()).Informer()
	p := newProcessor(w.cfg, w.client, w.res, w.handlers, informer.GetStore())
	p.spawning = handlers.ForResource(w.cfg.Registry.Spawning(), w.res)
	for _, h := range p.spawning {
		p.idleTimers = p.idleTimers || h.Idle > 0
	}
	if w.res.Namespaced {
		p.scope = w.scope.Match
	}
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) { p.notify(ctx, obj, initial, false) },
		UpdateFunc: func(_, obj any) {
			p.notify(ctx, obj, false, false)
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			p.notify(ctx, obj, false, true)
		},
	})
	if err != nil {
		w.cfg.Logger.Error(fmt.Sprintf("Cannot watch %s: %v", w.res, err))
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { informer.RunWithContext(ctx) })
	<-ctx.Done()
	wg.Wait()
	p.wait()
}
