package kopfgo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/component"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/indexing"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/logging"
)

// Settings is the operator's configuration; its zero value is Kopf's
// defaults. See the fields for what each area tunes.
type Settings = config.Settings

// Options configure an operator.
type Options struct {
	Settings Settings
	// Namespaces limits the operator to these namespaces (glob patterns
	// allowed). Empty means cluster-wide.
	Namespaces []string
	// Standalone disables peering, as Kopf's --standalone does: no peering
	// object is read or written (compat: peering-standalone); the same as
	// Settings.Peering.Standalone.
	Standalone bool
	// RESTConfig is the cluster to connect to. Nil: the kubeconfig
	// (KUBECONFIG, ~/.kube/config) or the in-cluster service account.
	RESTConfig *rest.Config
	// Kubeconfig and Context pick a kubeconfig file and context when
	// RESTConfig is nil.
	Kubeconfig string
	Context    string
	// Logger receives the operator's logs. Nil: Kopf's "full" format at INFO
	// on stderr.
	Logger *slog.Logger
	// Clock drives retries, backoffs and timers; tests inject a fake one.
	// Nil: the real clock.
	Clock clock.WithTicker
	// Liveness, e.g. "http://0.0.0.0:8080/healthz", serves the probe
	// handlers' results there once the operator has started. Empty: off.
	Liveness string
	// MetricsAddr, e.g. "0.0.0.0:9090", serves Prometheus metrics at
	// /metrics and readiness at /readyz. Without it, the liveness endpoint
	// serves both, if there is one.
	MetricsAddr string
	// LeaderElection, when enabled, makes one replica of the operator serve
	// while the others stand by, on a Lease (see LeaderElection).
	LeaderElection LeaderElection
	// Sharding, when Shards is set, spreads the objects over several active
	// replicas of the operator, on Leases (see Sharding).
	Sharding Sharding
	// Memo is the operator's memo (see Memo), the one activity handlers
	// get: every object's memo starts as a shallow copy of it. Nil: an
	// empty one.
	Memo *Memo
	// TracerProvider receives the spans of passes, handler calls and API
	// requests (docs/tracing.md); the caller keeps it and shuts it down.
	// Nil: the standard OTEL_* environment variables decide, and tracing
	// is off unless they ask for it (an OTLP endpoint or
	// OTEL_TRACES_EXPORTER=otlp); Run then flushes and shuts down the
	// provider it made. A no-op provider turns tracing off whatever the
	// environment says.
	TracerProvider trace.TracerProvider
}

// Operator is a set of handlers and the machinery that runs them. Create it
// with New; register handlers with op.On…; run it with Run. Constructing and
// registering start nothing.
type Operator struct {
	// On is the operator's Registrar: op.On.Create(…), or, for the
	// handlers of a package, mypkg.Register(op.On). Do not reassign it.
	On Registrar

	opts    Options
	reg     *handling.Registry
	running atomic.Bool

	mu       sync.Mutex
	indexers []indexing.Indexer
	memo     *Memo

	// logFilter is Settings.Logging.Filter for the loggers of a run,
	// replaced when the startup handlers have changed it.
	logFilter logging.FilterVar
	// ultimate is the run's Process.UltimateExitingTimeout once the startup
	// handlers have had their say (they may change it); nil before.
	ultimate atomic.Pointer[time.Duration]
	// obs is the running operator's readiness and metrics; nil when it
	// does not run.
	obs atomic.Pointer[observability]
}

// Ready reports whether the operator runs and is ready, as /readyz says:
// the startup handlers have finished and every served resource's initial
// listing (indices included) is complete; when not, it says why. Test
// runners wait for it (kopfgotest.Run).
func (op *Operator) Ready() (bool, string) {
	obs := op.obs.Load()
	if obs == nil {
		return false, "the operator is not running"
	}
	return obs.ready.Ready()
}

// New creates an operator. It starts nothing.
func New(opts Options) *Operator {
	op := &Operator{opts: opts, reg: &handling.Registry{}, memo: opts.Memo}
	if op.memo == nil {
		op.memo = &Memo{}
	}
	op.On = Registrar{op: op}
	return op
}

// Memo returns the operator's memo: activity handlers get it, and every
// object's memo is copied from it when the object first appears.
func (op *Operator) Memo() *Memo { return op.memo }

var defaultOperator = New(Options{})

// Default returns the default operator, the one kopfgo.On registers on and
// `kopfgo run` runs.
func Default() *Operator { return defaultOperator }

// On is the default operator's Registrar, which `kopfgo run` passes to the
// packages' Register functions. Registering on it in init() works, but
// then importing the package registers its handlers in any binary.
var On = defaultOperator.On

// Err returns the registration errors collected so far, or nil.
func (op *Operator) Err() error { return op.reg.Err() }

// Run runs the operator until ctx ends. Registration errors are returned
// before anything starts, each naming its handler. Startup handlers run
// first, before anything touches the cluster; cleanup handlers run last,
// after everything else has stopped. Run owns every goroutine it starts and
// returns only after all of them have stopped.
//
// The operator is a list of components (components.go), started in this
// order, each once the ones before it are set up, and stopped in the
// reverse order: so the reactor stops first, and the Leases, the peering
// record and the cleanup handlers outlast every handler. One component's
// error stops them all and is Run's, naming the component.
func (op *Operator) Run(ctx context.Context) error {
	if !op.running.CompareAndSwap(false, true) {
		return fmt.Errorf("operator is already running: an Operator runs once at a time")
	}
	defer op.running.Store(false)
	if err := op.reg.Err(); err != nil {
		return err
	}
	r, err := op.newRun()
	if err != nil {
		return err
	}
	stop, err := r.tracing(ctx)
	if err != nil {
		return err
	}
	defer stop()
	return orCause(ctx, component.Run(ctx,
		component.Component{Name: "observability", Start: r.observability}, // /metrics, /readyz from the start
		component.Component{Name: "activities", Start: r.activities},       // startup, settings, memory limit; cleanup last
		component.Component{Name: "credentials", Start: r.credentials},     // login, flow control
		component.Component{Name: "liveness", Start: r.livenessEndpoint},
		component.Component{Name: "admission", Start: r.admission},
		component.Component{Name: "replica modes", Start: r.replicaModes}, // contradictions
		component.Component{Name: "leader election", Start: r.leaderElection},
		component.Component{Name: "sharding", Start: r.sharding},
		component.Component{Name: "peering", Start: r.peering},
		component.Component{Name: "reactor", Start: r.reactor},
	))
}

// ultimateExitingTimeout is Process.UltimateExitingTimeout as the running
// operator has it, a startup handler's change included (compat:
// settings-process); before the startup handlers have finished, the one in
// Options.
func (op *Operator) ultimateExitingTimeout() time.Duration {
	if d := op.ultimate.Load(); d != nil {
		return *d
	}
	return op.opts.Settings.WithDefaults().Process.UltimateExitingTimeout
}

// logger is Options.Logger (or Kopf's default) under the operator's log
// filter.
func (op *Operator) logger() *slog.Logger {
	l := op.opts.Logger
	if l == nil {
		l = logging.New(logging.Config{})
	}
	return logging.WithFilter(l, &op.logFilter)
}

// credentials returns the cluster connection: the login handlers' if there
// are any (with re-authentication on 401), else the built-in login's.
// login runs login handlers as the login activity.
func (op *Operator) credentials(ctx context.Context, logger *slog.Logger, clk clock.WithTicker, login func(context.Context, []*handling.ActivityHandler) (map[string]any, error)) (*rest.Config, error) {
	authLog := logging.Named(logger, "kopf.activities.authentication")
	if len(op.reg.Activities(handlers.Login)) == 0 {
		return op.builtinLogin(ctx, authLog, login)
	}
	var vault *kube.Vault
	vault = kube.NewVault(func(ctx context.Context) ([]*kube.ConnectionInfo, error) {
		round := "Initial authentication"
		if vault.Logins() > 0 {
			round = "Re-authentication"
		}
		authLog.Info(round + " has been initiated.")
		results, err := login(ctx, op.reg.Activities(handlers.Login))
		var items []*kube.ConnectionInfo
		var unusable []error
		for id, v := range results {
			info, _ := v.(*kube.ConnectionInfo)
			if info == nil {
				continue
			}
			if verr := info.Validate(); verr != nil {
				verr = fmt.Errorf("login handler %q returned unusable credentials: %w", id, verr)
				authLog.Error(verr.Error())
				unusable = append(unusable, verr)
				continue
			}
			items = append(items, info)
		}
		if len(items) == 0 {
			authLog.Warn(round + " has failed: no credentials were retrieved from the login handlers.")
			if err == nil {
				// Run's error then says what to fix, not only that nothing came.
				err = errors.Join(unusable...)
			}
		} else {
			authLog.Info(round + " has finished.")
		}
		return items, err
	}, clk)
	first, err := vault.Get(ctx)
	if err != nil {
		return nil, err
	}
	cfg := first.RESTConfig()
	cfg.BearerToken, cfg.Username, cfg.Password = "", "", ""
	cfg.WrapTransport = vault.Transport
	return cfg, nil
}

// builtinLogin is the login of an operator without login handlers: the
// REST config given in Options, else the kubeconfig or the pod's service
// account. It runs as Kopf's fallback login activity runs, with its id and
// lines ("Activity 'login_via_client' succeeded."), which Kopf's users and
// its example suite count; unlike a login handler's credentials, the config
// keeps what ConnectionInfo cannot hold (exec and auth-provider plugins),
// which renew themselves.
func (op *Operator) builtinLogin(ctx context.Context, authLog *slog.Logger, login func(context.Context, []*handling.ActivityHandler) (map[string]any, error)) (*rest.Config, error) {
	var cfg *rest.Config
	var loadErr error
	fallback := &handling.ActivityHandler{
		Handler: handling.Handler{ID: "login_via_client", Errors: handlers.ErrorsIgnored},
		Kind:    handlers.Login,
		Call: func(ctx context.Context, a *handlers.Activity) (any, error) {
			if op.opts.RESTConfig != nil {
				cfg = op.opts.RESTConfig
				a.Logger.Debug("Client is configured via the operator's REST config.")
				return nil, nil
			}
			var source string
			cfg, source, loadErr = kube.LoadConfigFrom(op.opts.Kubeconfig, op.opts.Context)
			if loadErr != nil {
				return nil, loadErr
			}
			a.Logger.Debug("Client is configured " + source + ".")
			return nil, nil
		},
	}
	authLog.Info("Initial authentication has been initiated.")
	_, err := login(ctx, []*handling.ActivityHandler{fallback})
	switch {
	case err != nil:
		return nil, err
	case cfg == nil:
		authLog.Warn("Initial authentication has failed: no credentials were retrieved from the login handlers.")
		if loadErr == nil {
			loadErr = ctx.Err()
		}
		return nil, loadErr
	}
	authLog.Info("Initial authentication has finished.")
	return cfg, nil
}

// Registrar registers handlers of every kind on one operator: the methods
// for the kinds (Create, Update, Delete, Resume, Field, Event, Daemon,
// Timer, the activities, Validate, Mutate), and the generic functions that
// take it first (OnIndex and the typed OnCreate, OnDaemon, …). A package
// registers its handlers in a function of its own,
//
//	func Register(r kopfgo.Registrar) {
//		r.Create("kopfexamples", createFn)
//		r.Timer("kopfexamples", pingFn, kopfgo.Interval(time.Minute))
//	}
//
// which `kopfgo run` and `kopfgo build` call with kopfgo.On, and programs
// and tests with the On of operators of their own. It is a small value:
// pass it by value.
type Registrar struct{ op *Operator }

// Change is the argument of create, update, delete, resume and field handlers.
type Change = handlers.Change

// Object is the part of handler arguments describing the object.
type Object = handlers.Object

// Attempt describes the current attempt of a retried handler.
type Attempt = handlers.Attempt

// ChangeFunc is a resource-changing handler; a non-nil result goes to
// status.<handler-id>.
type ChangeFunc = handlers.ChangeFunc

// Reason is the cause of a change: create, update, delete or resume.
type Reason = causes.Reason

// The reasons handlers see.
const (
	ReasonCreate = causes.Create
	ReasonUpdate = causes.Update
	ReasonDelete = causes.Delete
	ReasonResume = causes.Resume
)

// add registers a changing handler; named is the user's function when fn
// adapts it (typed handlers), so that the id and the deduplication are the
// user's function's, not the adapter's (which all typed handlers share).
func (r Registrar) add(resource string, reason causes.Reason, field string, isField bool, fn ChangeFunc, named any, apply func(*handling.Handler)) {
	r.op.reg.AddChanging(handling.Registration{
		Resource: resource, Reason: reason, Field: field, IsField: isField, Fn: fn, Named: named, Configure: apply,
	})
}

// Create registers a handler for objects that have never been handled.
func (r Registrar) Create(resource string, fn ChangeFunc, opts ...ChangeOption) {
	r.add(resource, causes.Create, "", false, fn, nil, changeConfig(opts))
}

// Update registers a handler for essential changes of an object since it was
// last handled: spec, labels, annotations; not status.
func (r Registrar) Update(resource string, fn ChangeFunc, opts ...ChangeOption) {
	r.add(resource, causes.Update, "", false, fn, nil, changeConfig(opts))
}

// Field registers a handler for changes of the field (a dotted path such as
// "spec.field"), added and removed included; Value, OldValue and NewValue
// filter the change further (compat: handlers-field, filters-field-change, filters-old-new). Old, New and Diff are
// relative to the field. As Kopf's code runs them, field handlers serve
// every cause that changes the field: updates, the creation of an object
// with the field set (reason create), a deletion after an unhandled change;
// Settings.Handling.FieldHandlersOnUpdatesOnly keeps them to updates, as
// Kopf's manual says.
func (r Registrar) Field(resource, field string, fn ChangeFunc, opts ...ChangeOption) {
	r.add(resource, causes.Update, field, true, fn, nil, changeConfig(opts))
}

// Delete registers a handler for objects being deleted. Unless Optional, it
// makes the operator put its finalizer on matching objects, so that deletion
// waits for the handler.
func (r Registrar) Delete(resource string, fn ChangeFunc, opts ...ChangeOption) {
	r.add(resource, causes.Delete, "", false, fn, nil, changeConfig(opts))
}

// Resume registers a handler for objects found, already handled, when the
// operator starts: it runs once per object per operator process.
func (r Registrar) Resume(resource string, fn ChangeFunc, opts ...ChangeOption) {
	r.add(resource, causes.Resume, "", false, fn, nil, changeConfig(opts))
}
