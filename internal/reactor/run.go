package reactor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/daemons"
	"github.com/kopfgo/kopfgo/handlers"
	"github.com/kopfgo/kopfgo/indexing"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/posting"
	"github.com/kopfgo/kopfgo/internal/pyrepr"
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
	Client     *kube.Client
	handlerCtx context.Context
	// onSleep, for tests, is told when a worker starts sleeping until its
	// delayed handlers are due, and whether it is settled: its own last patch
	// has come back and no news is waiting to interrupt the sleep.
	onSleep func(key string, settled bool)
	// onWait, for tests, is told when a worker waits for news or its timer,
	// the timer set: scripted scenarios wait on it rather than poll, and may
	// step the clock past that timer.
	onWait func()

	// Limiter caps concurrent handler invocations (Execution.MaxWorkers);
	// nil means no cap.
	Limiter chan struct{}
	// DefaultNamespace is the namespace of the credentials' context, where
	// events about cluster-scoped objects go; "" is "default".
	DefaultNamespace string
	// Poster posts Kubernetes Events; nil: Run makes one from
	// Settings.Posting.
	Poster *posting.Poster
	// Indexers maintain the operator's indices from watch events.
	Indexers []indexing.Runner
	// Memo is the operator's memo, copied into every object's memo when
	// the object first appears (compat: memos-operator). Nil: objects start empty.
	Memo *handlers.Memo
	// Ready, when set, holds every handler until it is closed: until all
	// indices have seen the initial listings (compat: indices-complete). Run sets it.
	Ready <-chan struct{}
	// Daemons runs the daemons and timers; Run makes it.
	Daemons *daemons.Manager
	// Hooks are told of the reactor's progress (readiness, metrics); nil:
	// none.
	Hooks Hooks
}

// Run serves every resource the registered handlers select until ctx ends,
// and returns after every goroutine it started has stopped.
func Run(ctx context.Context, cfg Config) error {
	client := cfg.Client
	if client == nil {
		var err error
		net := cfg.Settings.Networking
		if client, err = kube.NewClient(cfg.REST, kube.ClientOptions{RequestTimeout: net.RequestTimeout, TrustEnv: net.TrustEnv}); err != nil {
			return err
		}
	}
	client.Retry = kube.Retry{Backoffs: cfg.Settings.Networking.ErrorBackoffs, Clock: cfg.Clock, Logger: cfg.Logger}
	served, err := resolve(ctx, client, cfg.Registry, cfg.Indexers, cfg.Logger, cfg.Settings.Scanning.Disabled)
	if err != nil {
		return err
	}
	if n := cfg.Settings.Execution.MaxWorkers; n > 0 {
		cfg.Limiter = make(chan struct{}, n)
	}

	ctx, stopPosting := startPosting(ctx, &cfg, countingClient{client, cfg.hooks()}) // hook: events posted
	defer stopPosting()                                                              // after the watchers, so that handlers' last events are posted
	ctx, cancel := context.WithCancel(kube.WithConfig(ctx, cfg.REST))
	defer cancel()
	cfg.Daemons = daemons.NewManager(ctx, daemons.Config{
		Clock: cfg.Clock, DefaultBackoff: cfg.Settings.Execution.DefaultBackoff, Background: cfg.Settings.Background,
	})
	cfg.hooks().Daemons(cfg.Daemons.Running) // hook: daemons and timers running
	var wg sync.WaitGroup
	// Handlers run under their own context: when the operator stops, running
	// handlers get Queueing.ExitTimeout to finish before it is cancelled.
	hctx, hcancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer hcancel(nil)
	cfg.handlerCtx = hctx
	ready := make(chan struct{})
	if len(cfg.Indexers) > 0 {
		cfg.Ready = ready
	}
	orch := newOrchestrator(ctx, cfg, client, &wg)
	orch.serve(served)
	cfg.hooks().Served() // hook: readiness
	if cfg.Ready != nil {
		// The watchers of the first serve hold the handlers until their
		// indexers have seen the initial listings; resources that appear
		// later are indexed as they come, without holding anything.
		indexed := orch.stopGating()
		wg.Go(func() {
			indexed.Wait()
			if ctx.Err() == nil {
				cfg.Logger.Debug("All indices are populated from the initial listings.")
			}
			close(ready)
		})
	}
	if !cfg.Settings.Scanning.Disabled {
		wg.Go(func() { orch.watchCRDs(ctx) })
	}
	<-ctx.Done()
	// Daemons stop at once and in parallel with the watchers; each has its
	// own stages, and those that do not exit are abandoned (compat: daemons-exit).
	cfg.Daemons.Shutdown()
	stopped := make(chan struct{})
	go func() {
		wg.Wait()
		close(stopped)
	}()
	if d := cfg.Settings.Queueing.ExitTimeout; d > 0 {
		t := cfg.Clock.NewTimer(d)
		select {
		case <-stopped:
		case <-t.C():
			cfg.Logger.Warn(fmt.Sprintf("Handlers are still running %s after the operator's stop; cancelling them.", d))
		}
		t.Stop()
	}
	hcancel(ErrOperatorExiting)
	<-stopped
	return nil
}

// ErrOperatorExiting is the cause of the cancellation of handlers that are
// still running when the operator's exit timeout has passed.
var ErrOperatorExiting = errors.New("the operator is exiting")

// resolve turns the handlers' selectors into discovered resources. A
// selector matching resources of several groups is an error naming its
// handlers. A selector matching nothing is a warning while scanning is on
// (its CRD may come later, and is served then) and an error otherwise.
func resolve(ctx context.Context, client *kube.Client, reg *handlers.Registry, indexers []indexing.Runner, log *slog.Logger, strict bool) ([]resources.Resource, error) {
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
			if errors.Is(err, resources.ErrUnresolved) && !strict {
				log.Warn(fmt.Sprintf("Unresolved resources cannot be served (try creating their CRDs): %s for handlers %s; they are served as soon as they appear.", sel, strings.Join(names, ", ")))
				continue
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
	watching := w.cfg.Settings.Watching
	// Kopf's wording: "in 'ns'" (a Python repr) or "cluster-wide".
	where := "cluster-wide"
	if w.namespace != "" {
		where = "in " + pyrepr.Repr(w.namespace)
	}
	w.cfg.Logger.Debug(fmt.Sprintf("Starting the watch-stream for %s %s.", w.res, where))
	defer w.cfg.Logger.Debug(fmt.Sprintf("Stopping the watch-stream for %s %s.", w.res, where))
	lw := w.client.ListWatch(w.res, w.namespace, kube.WatchOptions{
		ServerTimeout: watching.ServerTimeout, InactivityTimeout: watching.InactivityTimeout,
		ClientTimeout: watching.ClientTimeout, KeepManagedFields: watching.KeepManagedFields, Clock: w.cfg.Clock,
		OnInactive: func() {
			// Routine on an idle cluster: Kopf says so at DEBUG.
			w.cfg.Logger.Debug(fmt.Sprintf("Watch-stream for %s %s is inactive, reconnecting.", w.res, where))
		},
	})
	informer := cache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, cache.Indexers{})
	_ = informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		w.watchError(ctx, err, where)
	})
	p := newProcessor(w.cfg, w.client, w.res, w.handlers, informer.GetStore())
	p.events, p.indexers = w.events, w.indexers
	p.spawning = handlers.ForResource(w.cfg.Registry.Spawning(), w.res)
	for _, h := range p.spawning {
		p.idleTimers = p.idleTimers || h.Idle > 0
	}
	if w.res.Namespaced {
		p.scope = w.scope.Match
	}
	if w.indexed != nil {
		defer w.indexed() // never leave the other handlers waiting
	}
	resName := w.res.String()
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			typ := handlers.EventAdded
			if initial {
				typ = handlers.EventListed
			}
			w.cfg.hooks().WatchEvent(resName, string(typ)) // hook: watch events
			p.observe(ctx, obj, typ, initial, false)
		},
		UpdateFunc: func(_, obj any) {
			w.cfg.hooks().WatchEvent(resName, string(handlers.EventModified))
			p.observe(ctx, obj, handlers.EventModified, false, false)
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			w.cfg.hooks().WatchEvent(resName, string(handlers.EventDeleted))
			p.observe(ctx, obj, handlers.EventDeleted, false, true)
		},
	})
	if err != nil {
		w.cfg.Logger.Error(fmt.Sprintf("Cannot watch %s: %v", w.res, err))
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { informer.RunWithContext(ctx) })
	wg.Go(func() {
		key := w.res.String() + "@" + w.namespace
		if cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
			w.cfg.hooks().WatchSynced(key) // hook: readiness
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
	p.wait()
}

// watchError reports a failed list or watch; client-go retries it with its
// backoff. A 403 is the operator's RBAC missing list or watch, which only a
// human can fix, so it says exactly what to grant; the end of a stream
// (expired versions, a restarted apiserver) is routine and logged quietly.
func (w *watcher) watchError(ctx context.Context, err error, where string) {
	if ctx.Err() == nil {
		w.cfg.hooks().WatchRestart(w.res.String()) // hook: watch restarts
	}
	switch {
	case ctx.Err() != nil:
	case apierrors.IsForbidden(err):
		w.cfg.Logger.Error(fmt.Sprintf("The operator may not list or watch %s %s; grant it the \"list\" and \"watch\" verbs on %q in its RBAC: %v",
			w.res, where, w.res.Plural+"."+w.res.Group, err))
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		w.cfg.Logger.Debug(fmt.Sprintf("Restarting the watch-stream for %s %s.", w.res, where))
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		w.cfg.Logger.Debug(fmt.Sprintf("The watch of %s %s has ended (%v); watching again.", w.res, where, err))
	default:
		w.cfg.Logger.Warn(fmt.Sprintf("Cannot watch %s %s, retrying: %v", w.res, where, err))
	}
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
