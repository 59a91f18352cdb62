package kopfgo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/admission"
	"github.com/kopfgo/kopfgo/internal/component"
	"github.com/kopfgo/kopfgo/internal/flowcontrol"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/health"
	"github.com/kopfgo/kopfgo/internal/indexing"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/logging"
	"github.com/kopfgo/kopfgo/internal/reactor"
	"github.com/kopfgo/kopfgo/internal/replicas"
	"github.com/kopfgo/kopfgo/internal/tracing"
)

// run is one run of an operator: what its components (Operator.Run)
// share. A component writes its fields before it is ready, and the
// components after it read them only once it is.
type run struct {
	op       *Operator
	logger   *slog.Logger
	clock    clock.WithTicker
	liveness *health.Endpoint // nil: no liveness endpoint
	obs      *observability
	// settings are Options.Settings, as the startup handlers leave them,
	// then with the defaults.
	settings Settings
	// standby holds the reasons the operator stands by (the replica
	// modes); the reactor watches nothing while any holds.
	standby *replicas.Standby
	cfg     *rest.Config      // the credentials; nil before the login
	flow    *flowcontrol.Gate // the API's flow control, once there are credentials
	shards  *replicas.Serving // sharding: the shards this replica serves; nil: every object
	tracer  *tracing.Tracer   // nil: tracing is off
}

// newRun checks the options and creates the run's parts; it starts
// nothing.
func (op *Operator) newRun() (*run, error) {
	r := &run{op: op, settings: op.opts.Settings, clock: op.opts.Clock, obs: newObservability(op.opts), standby: &replicas.Standby{}}
	if op.opts.Liveness != "" {
		ep, err := health.ParseEndpoint(op.opts.Liveness)
		if err != nil {
			return nil, err
		}
		r.liveness = &ep
	}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	op.logFilter.Set(r.settings.Logging.Filter)
	r.logger = op.logger()
	return r, nil
}

// activity runs the activity handlers of kind hs.
func (r *run) activity(ctx context.Context, kind handlers.ActivityKind, hs []*handling.ActivityHandler) (map[string]any, error) {
	env := handling.ActivityEnv{Clock: r.clock, Memo: r.op.memo, Settings: &r.settings}
	env.Logger = logging.Named(r.logger, "kopf.activities."+string(kind))
	env.DefaultBackoff = r.settings.WithDefaults().Execution.DefaultBackoff
	return handling.RunActivity(ctx, kind, hs, env)
}

// activities runs the startup handlers, before anything touches the
// cluster, and settles what they may change (settings, the log filter,
// the memory limit, the ultimate exiting timeout); once every component
// after it has stopped, it runs the cleanup handlers.
func (r *run) activities(ctx context.Context) error {
	if _, err := r.activity(ctx, handlers.Startup, r.op.reg.Activities(handlers.Startup)); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("the operator cannot start: %w", err)
	}
	r.obs.ready.StartupDone()
	// The startup handlers have returned: nothing writes settings now.
	r.op.logFilter.Set(r.settings.Logging.Filter)
	r.settings = r.settings.WithDefaults()
	applyMemoryLimit(rootFS, r.settings.Process.MemoryLimitRatio, r.logger)
	r.op.ultimate.Store(&r.settings.Process.UltimateExitingTimeout)
	defer r.op.ultimate.Store(nil)
	component.Ready(ctx)
	<-ctx.Done()
	// The cleanup handlers get the clients if there were credentials.
	if _, err := r.activity(context.WithoutCancel(r.clients(ctx)), handlers.Cleanup, r.op.reg.Activities(handlers.Cleanup)); err != nil {
		r.logger.Error(fmt.Sprintf("Cleanup has failed: %v", err))
	}
	return nil
}

// credentials logs in (Operator.credentials) and sets up the API's flow
// control for the clients of the components after it.
func (r *run) credentials(ctx context.Context) error {
	cfg, err := r.op.credentials(ctx, r.logger, r.clock, func(ctx context.Context, hs []*handling.ActivityHandler) (map[string]any, error) {
		return r.activity(ctx, handlers.Login, hs)
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	r.cfg, r.flow = cfg, flowControl(cfg, r.settings, r.clock, r.logger, r.obs)
	return nil
}

// clients is ctx with the credentials and the clients (client.go), which
// handlers, probes and cleanup reach through it. Their requests pass the
// run's flow control like the operator's own: in a backlog or an outage,
// a handler's calls wait at the same gate instead of adding to the load or
// retrying on their own (compat: flow-control).
func (r *run) clients(ctx context.Context) context.Context {
	if r.cfg == nil {
		return ctx
	}
	cfg := r.cfg
	if r.flow != nil || r.tracer != nil {
		cfg = rest.CopyConfig(cfg)
	}
	if r.flow != nil {
		cfg.Wrap(r.flow.Wrap)
	}
	if r.tracer != nil {
		cfg.Wrap(r.tracer.Transport) // the handlers' own requests nest in their spans
	}
	return WithClients(ctx, cfg)
}

// client is a new API client on the run's credentials and flow control.
func (r *run) client() (*kube.Client, error) {
	opts := clientOptions(r.settings, r.flow)
	opts.Tracer = r.tracer
	return kube.NewClient(r.cfg, opts)
}

// livenessEndpoint serves the probe handlers' results (Options.Liveness),
// with /readyz and /metrics unless they have a server of their own.
func (r *run) livenessEndpoint(ctx context.Context) error {
	if r.liveness == nil {
		return nil
	}
	srv := &health.Server{
		Endpoint: *r.liveness, Clock: r.clock, Logger: r.logger, Extra: r.obs.handlers(r.op.opts),
		Probe: func(ctx context.Context) (map[string]any, error) {
			return r.activity(ctx, handlers.Probe, r.op.reg.Activities(handlers.Probe))
		},
	}
	component.Ready(ctx)
	return srv.Run(r.clients(ctx))
}

// admission serves the validating and mutating handlers, if any, and the
// sharding's labelling at creation (after the user's handlers, so that it
// labels the object they made).
func (r *run) admission(ctx context.Context) error {
	hs := append(r.op.reg.Admissions(), r.shardLabelling()...)
	if len(hs) == 0 {
		return nil
	}
	if r.settings.Admission.Server == nil {
		return admission.ErrNoServer
	}
	client, err := r.client()
	if err != nil {
		return err
	}
	settings := r.settings.Admission
	own := r.op.leaseNamespace("") // the pod's, as for the Leases
	if svc := settings.Service; svc != nil && svc.Namespace == "" {
		resolved := *svc
		resolved.Namespace = own
		settings.Service = &resolved
	}
	component.Ready(ctx)
	return admission.Run(r.clients(ctx), admission.Config{
		Handlers: hs, Settings: settings, Client: client, Logger: r.logger, Memo: r.op.memo,
		Namespace: own, Clock: r.clock, Observe: r.obs.admissionRequest(),
	})
}

// replicaModes fails on options that contradict each other (checkModes).
func (r *run) replicaModes(context.Context) error {
	return checkModes(r.op.opts, r.settings)
}

// reactor serves the resources until it is stopped, first of all the
// components, so that those before it (Leases, peering, cleanup) outlast
// every handler.
func (r *run) reactor(ctx context.Context) error {
	client, err := r.client()
	if err != nil {
		return err
	}
	r.op.mu.Lock()
	indexers := append([]indexing.Indexer(nil), r.op.indexers...)
	r.op.mu.Unlock()
	return reactor.Run(r.clients(ctx), reactor.Config{
		Client:     client,
		Registry:   r.op.reg,
		Settings:   r.settings,
		REST:       r.cfg,
		Namespaces: r.op.opts.Namespaces,
		Logger:     r.logger,
		Clock:      r.clock,
		Indexers:   indexers,
		Memo:       r.op.memo,
		Hooks:      r.obs, // readiness and metrics
		Tracer:     r.tracer,
		Pause:      r.standby,
		Shards:     r.shards, // sharding

		DefaultNamespace: r.op.defaultNamespace(),
	})
}

// orCause is err, or the cause ctx ended with if there is no error and the
// cause is not a plain cancellation (a deadline, a caller's cause).
func orCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); err == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}
