package kopfgo

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/kopfgo/kopfgo/internal/component"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/health"
	"github.com/kopfgo/kopfgo/internal/metrics"
	"github.com/kopfgo/kopfgo/internal/reactor"
	"github.com/kopfgo/kopfgo/internal/version"
)

// observability is a run's readiness and metrics, and the reactor's hooks
// that feed them.
type observability struct {
	ready   *health.Readiness
	metrics *metrics.Metrics // nil: no metrics are served
}

func newObservability(o Options) *observability {
	obs := &observability{ready: &health.Readiness{}}
	if o.MetricsAddr != "" || o.Liveness != "" {
		build := version.Current()
		obs.metrics = metrics.New(metrics.Options{Namespaced: len(o.Namespaces) > 0, Version: build.Version, Commit: build.Revision})
	}
	return obs
}

// handlers are the extra paths of the liveness server: /readyz, and
// /metrics unless they have a server of their own.
func (obs *observability) handlers(o Options) map[string]http.Handler {
	hs := map[string]http.Handler{"/readyz": obs.ready}
	if o.MetricsAddr == "" && obs.metrics != nil {
		hs["/metrics"] = obs.metrics.HTTPHandler()
	}
	return hs
}

// observability makes the run's readiness and metrics the operator's
// (Operator.Ready) and serves them on Options.MetricsAddr, if set, from
// before the startup handlers, so that /readyz says 503 meanwhile, until
// every other component has stopped.
func (r *run) observability(ctx context.Context) error {
	r.op.obs.Store(r.obs)
	defer r.op.obs.Store(nil)
	component.Ready(ctx)
	if r.op.opts.MetricsAddr == "" {
		<-ctx.Done()
		return nil
	}
	err := r.obs.serve(ctx, r.op.opts, r.logger)
	if err != nil {
		r.logger.Error(err.Error())
	}
	return err
}

// serve serves /metrics and /readyz on o.MetricsAddr until ctx ends.
func (obs *observability) serve(ctx context.Context, o Options, logger *slog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", obs.metrics.HTTPHandler())
	mux.Handle("/readyz", obs.ready)
	return health.Serve(ctx, o.MetricsAddr, nil, mux, health.Timeouts{}, logger, "metrics", "Serving metrics at http://%s/metrics")
}

// The reactor's hooks (reactor.Hooks).

func (obs *observability) WatchStarted(key string) { obs.ready.WatchStarted(key) }
func (obs *observability) WatchSynced(key string)  { obs.ready.WatchSynced(key) }
func (obs *observability) WatchStopped(key string) { obs.ready.WatchStopped(key) }
func (obs *observability) Served()                 { obs.ready.Served() }
func (obs *observability) Unresolved(missing []string, blocking bool) {
	obs.ready.Unresolved(missing, blocking)
}
func (obs *observability) Paused(reasons []string) {
	obs.ready.Paused(reasons)
	if obs.metrics != nil {
		obs.metrics.Paused(len(reasons) > 0)
	}
}

// Leading: this replica holds the leader election's Lease, or not.
func (obs *observability) Leading(leading bool) {
	if obs.metrics != nil {
		obs.metrics.Leading(leading)
	}
}

// ShardsHeld: the shards this replica holds (sharding).
func (obs *observability) ShardsHeld(held []int) {
	obs.ready.Shards(held)
	if obs.metrics != nil {
		obs.metrics.ShardsHeld(len(held))
	}
}

// admissionRequest is what the webhook server tells of each request: nil
// without metrics.
func (obs *observability) admissionRequest() func(webhook string, status int, d time.Duration) {
	if obs.metrics == nil {
		return nil
	}
	return obs.metrics.AdmissionRequest
}

func (obs *observability) WatchEvent(resource, typ string) {
	if obs.metrics != nil {
		obs.metrics.WatchEvent(resource, typ)
	}
}

func (obs *observability) WatchRestart(resource string) {
	if obs.metrics != nil {
		obs.metrics.WatchRestart(resource)
	}
}

func (obs *observability) Busy(delta int) {
	if obs.metrics != nil {
		obs.metrics.Busy(delta)
	}
}

func (obs *observability) QueueWait(d time.Duration) {
	if obs.metrics != nil {
		obs.metrics.QueueWait(d)
	}
}

func (obs *observability) Handler(c reactor.HandlerCall, d time.Duration) {
	if obs.metrics != nil {
		obs.metrics.HandlerCalled(metrics.Call{
			Resource: c.Resource, Namespace: c.Namespace, Handler: c.ID, Cause: string(c.Reason), Outcome: outcome(c.Err), Retry: c.Retry,
		}, d)
	}
}

func (obs *observability) EventPosted(err error) {
	if obs.metrics != nil {
		obs.metrics.EventPosted(err)
	}
}

func (obs *observability) Daemons(running func() int) {
	if obs.metrics != nil {
		obs.metrics.Daemons(running)
	}
}

func (obs *observability) Waiting(waiting func() int) {
	if obs.metrics != nil {
		obs.metrics.Waiting(waiting)
	}
}

// outcome names a handler's error as the metrics do, by the error's kind.
func outcome(err error) string { return handling.OutcomeOf(err) }
