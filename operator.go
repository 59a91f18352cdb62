package kopfgo

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/causes"
	"github.com/kopfgo/kopfgo/handlers"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/logging"
	"github.com/kopfgo/kopfgo/internal/reactor"
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
	// Standalone disables peering with other operators of the same name.
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
}

// Operator is a set of handlers and the machinery that runs them. Create it
// with New; register handlers with op.On…; run it with Run. Constructing and
// registering start nothing.
type Operator struct {
	// On registers resource-changing handlers on this operator. Do not
	// reassign it.
	On Registrar

	opts    Options
	reg     *handlers.Registry
	running atomic.Bool
}

// New creates an operator. It starts nothing.
func New(opts Options) *Operator {
	op := &Operator{opts: opts, reg: &handlers.Registry{}}
	op.On = Registrar{op: op}
	return op
}

var defaultOperator = New(Options{})

// Default returns the default operator, the one kopfgo.On registers on and
// `kopfgo run` runs.
func Default() *Operator { return defaultOperator }

// On registers handlers on the default operator.
var On = defaultOperator.On

// Err returns the registration errors collected so far, or nil.
func (op *Operator) Err() error { return op.reg.Err() }

// Run runs the operator until ctx ends. Registration errors are returned
// before anything starts, each naming its handler. Run owns every goroutine
// it starts and returns only after all of them have stopped.
func (op *Operator) Run(ctx context.Context) error {
	if !op.running.CompareAndSwap(false, true) {
		return fmt.Errorf("operator is already running: an Operator runs once at a time")
	}
	defer op.running.Store(false)
	if err := op.reg.Err(); err != nil {
		return err
	}
	if len(op.reg.Changing()) == 0 && len(op.reg.Spawning()) == 0 {
		return fmt.Errorf("%w: no handlers are registered; register some with On.Create/Update/Delete/Resume/Field, Daemon or Timer", ErrRegistration)
	}
	logger := op.opts.Logger
	if logger == nil {
		logger = logging.New(logging.Config{})
	}
	cfg := op.opts.RESTConfig
	if cfg == nil {
		var err error
		cfg, err = kube.LoadConfig(op.opts.Kubeconfig, op.opts.Context)
		if err != nil {
			return err
		}
	}
	clk := op.opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	return reactor.Run(ctx, reactor.Config{
		Registry:   op.reg,
		Settings:   op.opts.Settings.WithDefaults(),
		REST:       cfg,
		Namespaces: op.opts.Namespaces,
		Logger:     logger,
		Clock:      clk,
	})
}

// Registrar registers resource-changing handlers on an operator.
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

func (r Registrar) add(resource string, reason causes.Reason, field string, isField bool, fn ChangeFunc, apply func(*handlers.Handler)) {
	r.op.reg.AddChanging(handlers.Registration{
		Resource: resource, Reason: reason, Field: field, IsField: isField, Fn: fn, Configure: apply,
	})
}

// Create registers a handler for objects that have never been handled.
func (r Registrar) Create(resource string, fn ChangeFunc, opts ...ChangeOption) {
	r.add(resource, causes.Create, "", false, fn, func(h *handlers.Handler) {
		for _, o := range opts {
			o.applyChange(h)
		}
	})
}

// Update registers a handler for essential changes of an object since it was
// last handled: spec, labels, annotations; not status.
func (r Registrar) Update(resource string, fn ChangeFunc, opts ...ChangeOption) {
	r.add(resource, causes.Update, "", false, fn, func(h *handlers.Handler) {
		for _, o := range opts {
			o.applyChange(h)
		}
	})
}

// Field registers a handler for updates that change the field (a dotted
// path such as "spec.field"). Old, New and Diff are relative to the field.
// Following Kopf's manual, it does not fire on creation.
func (r Registrar) Field(resource, field string, fn ChangeFunc, opts ...ChangeOption) {
	r.add(resource, causes.Update, field, true, fn, func(h *handlers.Handler) {
		for _, o := range opts {
			o.applyChange(h)
		}
	})
}

// Delete registers a handler for objects being deleted. Unless Optional, it
// makes the operator put its finalizer on matching objects, so that deletion
// waits for the handler.
func (r Registrar) Delete(resource string, fn ChangeFunc, opts ...DeleteOption) {
	r.add(resource, causes.Delete, "", false, fn, func(h *handlers.Handler) {
		for _, o := range opts {
			o.applyDelete(h)
		}
	})
}

// Resume registers a handler for objects found, already handled, when the
// operator starts: it runs once per object per operator process.
func (r Registrar) Resume(resource string, fn ChangeFunc, opts ...ResumeOption) {
	r.add(resource, causes.Resume, "", false, fn, func(h *handlers.Handler) {
		for _, o := range opts {
			o.applyResume(h)
		}
	})
}
