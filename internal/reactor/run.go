package reactor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/daemons"
	"github.com/kopfgo/kopfgo/internal/flowcontrol"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/indexing"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/posting"
	"github.com/kopfgo/kopfgo/internal/replicas"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/internal/tracing"
)

// Config is what the caller gives the reactor to run an operator.
type Config struct {
	Registry   *handling.Registry
	Settings   config.Settings // with defaults applied
	REST       *rest.Config
	Namespaces []string // empty: cluster-wide
	Logger     *slog.Logger
	Clock      clock.WithTicker
	// Client talks to the API; nil builds one from REST. Tests inject fakes.
	Client *kube.Client
	// DefaultNamespace is the namespace of the credentials' context, where
	// Kubernetes Events about cluster-scoped objects go; "" is "default".
	DefaultNamespace string
	// Indexers maintain the operator's indices from watch observations.
	Indexers []indexing.Indexer
	// Memo is the operator's memo, copied into every object's memo when
	// the object first appears (compat: memos-operator). Nil: objects start empty.
	Memo *handlers.Memo
	// Pause, while any reason is held in it, stops every watcher (and so
	// the handlers, daemons and timers) until the last reason is dropped:
	// peering and leader election hold it. Nil: never paused.
	Pause *replicas.Standby
	// Shards, when set, are the shards this replica serves (sharding,
	// replicas.Sharder.Serving): its watchers list and watch only the
	// objects labelled with them, one watch per shard, so that it never
	// receives the others' (only a resource with global indices is watched
	// whole, the others' objects going to those indices alone, and its
	// watch serves each shard apart within it); and while
	// it holds shard 0, it gives the objects of no shard their label
	// (labeller.go). The reactor follows its changes shard by shard: the
	// watchers of the shards taken out stop (handlers finish, daemons and
	// timers return, indices forget their objects) and it reports them
	// halted (replicas.Serving.Halted); those of the shards added start;
	// the others go on. Nil: every object.
	Shards *replicas.Serving
	// Hooks are told of the reactor's progress (readiness, metrics); nil:
	// none.
	Hooks Hooks
	// Tracer, when set, makes each pass over an object a span, and each
	// handler call in it a child span. Nil: tracing is off, at no cost.
	Tracer *tracing.Tracer

	// onSleep, for tests, is told when a worker starts sleeping until its
	// delayed handlers are due, and whether it is settled: its own last patch
	// has come back and no news is waiting to interrupt the sleep.
	onSleep func(key string, settled bool)
	// onWait, for tests, is told when a worker waits for news or its timer,
	// the timer set: scripted scenarios wait on it rather than poll, and may
	// step the clock past that timer.
	onWait func()
}

// run is what one Run holds besides its Config, shared by its watchers.
type run struct {
	Config
	client *kube.Client
	// poster posts Kubernetes Events, and object loggers tee into it.
	poster *posting.Poster
	// daemons runs the daemons and timers of every object.
	daemons *daemons.Manager
	// slots bound the passes in flight, every resource's together
	// (worker.go).
	slots *slots
	// rates cap the passes started per second of each resource
	// (Queueing.ResourceRate), by the resource's name.
	ratesMu sync.Mutex
	rates   map[string]*rate.Limiter
	// ready, when set, holds every handler until it is closed: until all
	// indices have seen the initial listings (compat: indices-complete).
	ready <-chan struct{}
	// handlerCtx is what handlers run under: when the operator stops,
	// running handlers get Queueing.ExitTimeout to finish before it is
	// cancelled. Nil: the pass's own context (tests).
	handlerCtx context.Context
}

// Run serves every resource the registered handlers select until ctx ends,
// and returns after every goroutine it started has stopped.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Settings.Validate(); err != nil {
		return err
	}
	client := cfg.Client
	if client == nil {
		var err error
		net := cfg.Settings.Networking
		if client, err = kube.NewClient(cfg.REST, kube.ClientOptions{RequestTimeout: net.RequestTimeout, TrustEnv: net.TrustEnv}); err != nil {
			return err
		}
	}
	client.Retry = kube.Retry{Backoffs: cfg.Settings.Networking.ErrorBackoffs, Clock: cfg.Clock, Logger: cfg.Logger}
	found, err := resolve(ctx, client, cfg.Registry, cfg.Indexers, cfg.Logger, cfg.Settings.Scanning.Disabled || cfg.Settings.Scanning.Strict)
	if err != nil {
		return err
	}
	if err := checkFields(ctx, client, cfg.Registry, found.served, cfg.Logger, cfg.Settings.Scanning.Strict); err != nil {
		return err
	}
	cfg.hooks().Unresolved(found.missing, !cfg.Settings.Scanning.ReadyWhileUnresolved) // hook: readiness

	poster := posting.New(posting.Config{
		Client:   countingClient{client, cfg.hooks()}, // hook: events posted
		Settings: cfg.Settings.Posting, Namespace: cfg.DefaultNamespace, Clock: cfg.Clock, Logger: cfg.Logger,
	})
	ctx, stopPosting := startPosting(ctx, poster)
	defer stopPosting() // after the watchers, so that handlers' last Kubernetes Events are posted
	// Handlers reach the credentials and the client (hierarchies.Apply) by ctx.
	ctx, cancel := context.WithCancel(kube.WithClient(kube.WithConfig(ctx, cfg.REST), client))
	defer cancel()
	hctx, hcancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer hcancel(nil)
	ready := make(chan struct{})
	r := &run{
		Config: cfg, client: client, poster: poster,
		daemons: daemons.NewManager(ctx, daemons.Config{
			Clock: cfg.Clock, DefaultBackoff: cfg.Settings.Execution.DefaultBackoff, Background: cfg.Settings.Background,
		}),
		slots:      newSlots(passLimit(cfg.Settings.Execution.MaxWorkers, client.Flow())),
		handlerCtx: hctx,
	}
	cfg.hooks().Waiting(r.slots.Waiting) // hook: objects waiting for a pass
	if len(cfg.Indexers) > 0 {
		r.ready = ready
	}
	cfg.hooks().Daemons(r.daemons.Running) // hook: daemons and timers running

	var wg sync.WaitGroup
	orch := newOrchestrator(ctx, r, &wg)
	orch.serve(found.served)
	wg.Go(func() { orch.follow(ctx) })
	cfg.hooks().Served() // hook: readiness
	if r.ready != nil {
		// The first watchers (the first serve's, or the resume's when the
		// operator starts paused) hold the handlers until their indexers
		// have seen the initial listings; resources that appear later are
		// indexed as they come, without holding anything.
		wg.Go(func() {
			if indexed := orch.indexing(ctx); indexed != nil {
				indexed.Wait()
			}
			if ctx.Err() == nil {
				cfg.Logger.Debug("All indices are populated from the initial listings.")
			}
			close(ready)
		})
	}
	if !cfg.Settings.Scanning.Disabled {
		wg.Go(func() { orch.watchCRDs(ctx, found.unresolved) })
	}
	<-ctx.Done()
	// Daemons stop at once and in parallel with the watchers; each has its
	// own stages, and those that do not exit are abandoned (compat: daemons-exit).
	r.daemons.Shutdown()
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
	hcancel(handlers.ErrOperatorExiting)
	<-stopped
	return nil
}

// passLimit is the bound of passes in flight: Execution.MaxWorkers when
// set; otherwise it follows the API's flow control, passesPerWrite passes
// per write the API server takes now (a pass spends part of its time
// decoding, detecting and in its handler, not writing), and never fewer
// than minPasses. No bound (0) while the flow control sets none: disabled,
// or fake clients in tests.
func passLimit(maxWorkers int, flow *flowcontrol.Gate) func() int {
	if maxWorkers > 0 {
		return func() int { return maxWorkers }
	}
	return func() int {
		n := flow.WriteLimit()
		if n <= 0 {
			return 0
		}
		return max(minPasses, passesPerWrite*n)
	}
}

// rateOf is the bucket of a resource's passes; nil without a cap.
func (r *run) rateOf(res resources.Resource) *rate.Limiter {
	q := r.Settings.Queueing
	if q.ResourceRate <= 0 {
		return nil
	}
	r.ratesMu.Lock()
	defer r.ratesMu.Unlock()
	if r.rates == nil {
		r.rates = map[string]*rate.Limiter{}
	}
	key := res.String()
	if r.rates[key] == nil {
		burst := q.ResourceBurst
		if burst <= 0 {
			burst = max(1, int(q.ResourceRate))
		}
		r.rates[key] = rate.NewLimiter(rate.Limit(q.ResourceRate), burst)
	}
	return r.rates[key]
}

const (
	passesPerWrite = 2
	minPasses      = 8
)

// startPosting runs the poster and puts it into ctx, so that handlers can
// post Kubernetes Events. stop lets the poster post what is still queued,
// then joins it: call it after the handlers have finished, so that their
// last Kubernetes Events go out.
func startPosting(ctx context.Context, p *posting.Poster) (_ context.Context, stop func()) {
	// The poster outlives ctx: it stops only when stop is called.
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { p.Run(pctx) })
	return posting.WithPoster(ctx, p), func() {
		cancel()
		wg.Wait()
	}
}

// resolve turns the handlers' selectors into discovered resources. A
// selector matching resources of several groups is an error naming its
// handlers. A selector matching nothing is a warning while scanning is on
// (its CRD may come later, and is served then) and an error otherwise, or
// with strict. Either says the nearest discovered name, if one is near
// enough to be a typo. The unresolved selectors are returned for the
// rescans (orchestration.go), and described for readiness.
func resolve(ctx context.Context, client *kube.Client, reg *handling.Registry, indexers []indexing.Indexer, log *slog.Logger, strict bool) (_ resolution, _ error) {
	var out resolution
	all, err := client.Discover(ctx)
	if err != nil {
		if len(all) == 0 {
			return out, err
		}
		log.Warn(fmt.Sprintf("Some API groups cannot be discovered and are skipped: %v", err))
	}
	var (
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
			hint := ""
			if errors.Is(err, resources.ErrUnresolved) {
				if near := sel.Suggest(all); near != "" {
					hint = fmt.Sprintf(" (did you mean %s?)", near)
				}
			}
			if errors.Is(err, resources.ErrUnresolved) && !strict {
				log.Warn(fmt.Sprintf("Unresolved resources cannot be served (try creating their CRDs): %s for handlers %s%s; they are served as soon as they appear.", sel, strings.Join(names, ", "), hint))
				out.unresolved = append(out.unresolved, sel)
				out.missing = append(out.missing, fmt.Sprintf("%s for handlers %s%s", sel, strings.Join(names, ", "), hint))
				continue
			}
			errs = append(errs, fmt.Errorf("%w: handlers %s: %w%s", handlers.ErrRegistration, strings.Join(names, ", "), err, hint))
			continue
		}
		for _, r := range found {
			if !seen[r.String()] {
				seen[r.String()] = true
				out.served = append(out.served, r)
			}
		}
	}
	return out, errors.Join(errs...)
}

// resolution is what resolve found.
type resolution struct {
	served     []resources.Resource
	unresolved []resources.Selector
	// missing describes the unresolved selectors: the selector, its
	// handlers, the name it may be a typo of.
	missing []string
}

// Hooks are told what the reactor does, for readiness and metrics. The
// reactor calls them at a handful of places only (each marked "hook:"), so
// that they survive changes of the reactor's inner structure; every method
// must be cheap and must not block, as most are called on hot paths.
type Hooks interface {
	// WatchStarted: a watch of a resource in a namespace (key
	// "resource@namespace") is started; WatchSynced: its initial listing,
	// indices included, has been processed; WatchStopped: it has stopped.
	WatchStarted(key string)
	WatchSynced(key string)
	WatchStopped(key string)
	// Served: the resources of the startup are all being watched.
	Served()
	// Unresolved: the registered resources that resolve to nothing, each
	// described (selector, handlers, the name it may be a typo of), after
	// the startup's scan and every rescan; none: all resolve. blocking:
	// the operator is not ready while any is unresolved.
	Unresolved(missing []string, blocking bool)
	// Paused: the operator stands by for these reasons (Config.Pause);
	// none: it serves again.
	Paused(reasons []string)
	// WatchEvent: a watch event of a resource, of a type ("ADDED", ...;
	// "LISTED" for the objects of the initial listing).
	WatchEvent(resource string, typ string)
	// WatchRestart: a list or watch failed or ended and is retried.
	WatchRestart(resource string)
	// Busy: an object's processing starts (+1) or ends (-1).
	Busy(delta int)
	// QueueWait: an object's pass starts d after the oldest news it
	// handles came (a watch event, a daemon's exit, a timer's touch).
	QueueWait(d time.Duration)
	// Handler: a handler ran (HandlerCall says which, where and how it
	// ended) for d.
	Handler(call HandlerCall, d time.Duration)
	// EventPosted: a Kubernetes Event was posted (err nil) or not.
	EventPosted(err error)
	// Daemons gives a count of the running daemons and timers.
	Daemons(running func() int)
	// Waiting gives a count of the objects waiting for a pass slot.
	Waiting(waiting func() int)
}

// HandlerCall is one call of a handler, as the Handler hook is told of it.
type HandlerCall struct {
	// Resource is the handler's resource as the logs name it
	// (kopfexamples.v1.kopf.dev); Namespace is its object's, "" for a
	// cluster-scoped one.
	Resource, Namespace string
	ID                  string
	// Reason is the cause for resource-changing handlers, "event" for
	// event handlers, "daemon" or "timer" for daemons and timers.
	Reason causes.Reason
	Err    error // nil: success
	Retry  int   // the attempt's number, 0 the first
}

// nopHooks is the Hooks of a Config without any.
type nopHooks struct{}

func (nopHooks) WatchStarted(string)                {}
func (nopHooks) WatchSynced(string)                 {}
func (nopHooks) WatchStopped(string)                {}
func (nopHooks) Served()                            {}
func (nopHooks) Unresolved([]string, bool)          {}
func (nopHooks) Paused([]string)                    {}
func (nopHooks) WatchEvent(string, string)          {}
func (nopHooks) WatchRestart(string)                {}
func (nopHooks) Busy(int)                           {}
func (nopHooks) QueueWait(time.Duration)            {}
func (nopHooks) Handler(HandlerCall, time.Duration) {}
func (nopHooks) EventPosted(error)                  {}
func (nopHooks) Daemons(func() int)                 {}
func (nopHooks) Waiting(func() int)                 {}

// countingClient tells the hooks of each Event posted.
type countingClient struct {
	posting.Client
	hooks Hooks
}

func (c countingClient) PostEvent(ctx context.Context, namespace string, body map[string]any) error {
	err := c.Client.PostEvent(ctx, namespace, body)
	c.hooks.EventPosted(err) // hook: events posted
	return err
}

// hooks is cfg.Hooks, or hooks that do nothing.
func (cfg *Config) hooks() Hooks {
	if cfg.Hooks == nil {
		return nopHooks{}
	}
	return cfg.Hooks
}
