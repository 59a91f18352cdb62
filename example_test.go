package kopfgo_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/kopfgo/kopfgo"
)

// quiet is an operator's options for examples: no logs on stderr.
var quiet = kopfgo.Options{Logger: slog.New(slog.DiscardHandler)}

func createFn(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info("creating", "spec", c.Spec)
	return map[string]any{"message": "hello world"}, nil // goes to status.createFn
}

func updateFn(ctx context.Context, c *kopfgo.Change) (any, error) { return nil, nil }

// Handlers are registered per cause on an operator (kopfgo.On registers on
// the default one, which `kopfgo run` runs). Registering checks everything
// it can without a cluster; the mistakes are collected, each naming its
// handler, and returned by Err and by Run before anything starts.
func Example() {
	op := kopfgo.New(quiet)
	op.On.Create("kopfexamples.kopf.dev", createFn, kopfgo.Retries(5), kopfgo.Timeout(time.Hour))
	op.On.Field("kopfexamples", "spec.field", updateFn)
	op.On.Delete("kopfexamples", func(ctx context.Context, c *kopfgo.Change) (any, error) {
		return nil, nil
	}, kopfgo.ID("cleanup_fn")) // a closure needs an id: it keys the progress stored on objects
	fmt.Println(op.Err())
	// Output:
	// <nil>
}

// Register is how a package of handlers registers them: on the Registrar it
// is given, not on a global operator, so that importing the package (for
// its types, say) registers nothing. `kopfgo run ./pkg` calls it with
// kopfgo.On; a program with an operator of its own, or a test, calls it with
// op.On, as many times as it makes operators.
func Register(r kopfgo.Registrar) {
	r.Create("kopfexamples", createFn)
	r.Field("kopfexamples", "spec.field", updateFn)
	r.Timer("kopfexamples", func(ctx context.Context, s *kopfgo.Spawn) (any, error) {
		return nil, nil
	}, kopfgo.ID("ping"), kopfgo.Interval(time.Minute))
}

func ExampleRegistrar() {
	op := kopfgo.New(quiet)
	Register(op.On)
	fmt.Println(op.Err())

	other := kopfgo.New(quiet)
	Register(other.On)
	Register(other.On) // twice on one operator: every handler is a duplicate
	fmt.Println(errors.Is(other.Err(), kopfgo.ErrRegistration))
	// Output:
	// <nil>
	// true
}

// Err (and Run) report every registration mistake at once, each naming
// the handler and saying how to fix it.
func ExampleOperator_Err() {
	op := kopfgo.New(quiet)
	op.On.Create("kopfexamples", func(ctx context.Context, c *kopfgo.Change) (any, error) { return nil, nil })
	op.On.Update("kopfexamples", updateFn, kopfgo.Value("x"))
	err := op.Err()
	fmt.Println(errors.Is(err, kopfgo.ErrRegistration))
	fmt.Println(err)
	// Output:
	// true
	// invalid handler registration: On.Create("kopfexamples") handler github.com/kopfgo/kopfgo_test.ExampleOperator_Err.func1: a closure or function literal has no stable name; give it kopfgo.ID("..."), because the id keys what is kept for it (its progress, its result in status, an index's name)
	// invalid handler registration: On.Update("kopfexamples") handler github.com/kopfgo/kopfgo_test.updateFn: the Value, OldValue and NewValue filters need a field: add kopfgo.Field("spec.something")
}

// Filters restrict a handler to the objects (and changes) they match; all
// the filters of a handler must match. Callbacks combine with AllOf, AnyOf,
// NoneOf and Not.
func ExampleLabels() {
	isProd := func(v any) bool { return v == "prod" }
	isStaging := func(v any) bool { return v == "staging" }
	op := kopfgo.New(quiet)
	op.On.Create("kopfexamples", createFn,
		kopfgo.Labels{"app": "web", "env": kopfgo.AnyOf(isProd, isStaging), "legacy": kopfgo.Absent},
		kopfgo.Annotations{"owner": kopfgo.Present},
		kopfgo.Field("spec.replicas"), kopfgo.Value(kopfgo.Not(func(v any) bool { return v == nil })),
		kopfgo.When(func(o *kopfgo.Object) bool { return o.Namespace != "kube-system" }))
	op.On.Update("kopfexamples", updateFn,
		kopfgo.Field("spec.size"), kopfgo.OldValue(kopfgo.Absent), kopfgo.NewValue(kopfgo.Present))
	fmt.Println(op.Err())
	fmt.Println(kopfgo.AnyOf(isProd, isStaging)("staging"), kopfgo.NoneOf(isProd, isStaging)("dev"))
	// Output:
	// <nil>
	// true true
}

// A handler's errors decide what comes next: Temporary retries after a
// delay, Permanent gives up for this change, anything else is retried after
// the handler's Backoff (or fails, per its Errors mode). A startup handler
// that runs out of Retries stops the operator before it touches a cluster,
// with a RetriesExceededError that wraps the handler's last error.
func ExampleRetriesExceededError() {
	errNotReady := errors.New("the database is not ready")
	op := kopfgo.New(quiet)
	op.On.Startup(func(ctx context.Context, a *kopfgo.Activity) error {
		return kopfgo.Temporary(errNotReady, time.Minute)
	}, kopfgo.ID("connect"), kopfgo.Retries(1))

	err := op.Run(context.Background())
	var exceeded *kopfgo.RetriesExceededError
	fmt.Println(errors.As(err, &exceeded), exceeded.ID, exceeded.Retries)
	fmt.Println(errors.Is(err, errNotReady), errors.Is(err, &kopfgo.PermanentError{}))
	// Output:
	// true connect 1
	// true true
}

// Temporary and Permanent wrap an error, which errors.Is still finds.
func ExampleTemporary() {
	errBusy := errors.New("the API is busy")
	err := fmt.Errorf("creating the child: %w", kopfgo.Temporary(errBusy, 10*time.Second))
	var temp *kopfgo.TemporaryError
	fmt.Println(errors.As(err, &temp), temp.Delay, errors.Is(err, errBusy))
	fmt.Println(errors.Is(kopfgo.PermanentMsg("bad spec"), &kopfgo.PermanentError{}))
	// Output:
	// true 10s true
	// true
}

// Sub-handlers split a resource-changing handler into children with
// progress, retries and results of their own ("create_fn/item1", …).
// Outside of such a handler, there is no parent to attach them to.
func ExampleExecute() {
	createFn := func(ctx context.Context, c *kopfgo.Change) (any, error) {
		fns := map[string]kopfgo.ChangeFunc{}
		for _, item := range []string{"item1", "item2"} {
			fns[item] = func(ctx context.Context, c *kopfgo.Change) (any, error) {
				return map[string]any{"created": item}, nil // status["create_fn/item1"]
			}
		}
		if err := kopfgo.Execute(ctx, fns); err != nil {
			return nil, err // ErrSubhandlersPending until every child is done
		}
		return map[string]any{"items": len(fns)}, nil
	}
	op := kopfgo.New(quiet)
	op.On.Create("kopfexamples", createFn, kopfgo.ID("create_fn"))
	fmt.Println(op.Err())

	err := kopfgo.Execute(context.Background(), nil)
	fmt.Println(errors.Is(err, kopfgo.ErrNoParentHandler))
	// Output:
	// <nil>
	// true
}

// Sub-handlers can also be declared one by one, with the options of a
// handler; they run after the parent returns.
func ExampleSubhandler() {
	createFn := func(ctx context.Context, c *kopfgo.Change) (any, error) {
		for _, item := range []string{"a", "b"} {
			err := kopfgo.Subhandler(ctx, func(ctx context.Context, c *kopfgo.Change) (any, error) {
				return nil, nil
			}, kopfgo.ID(item), kopfgo.Retries(3))
			if err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	op := kopfgo.New(quiet)
	op.On.Create("kopfexamples", createFn, kopfgo.ID("create_fn"))
	fmt.Println(op.Err())
	// Output:
	// <nil>
}

// An index maps keys to the values its function gives for each object; it
// is complete, from the initial listings, before any handler runs, and
// handlers read it by closing over it. Index names are unique per operator.
func ExampleOnIndex() {
	op := kopfgo.New(quiet)
	podsByApp := kopfgo.OnIndex(op.On, "v1/pods",
		func(ctx context.Context, o *kopfgo.Object) (map[string]string, error) {
			return map[string]string{o.Labels["app"]: o.Name}, nil
		}, kopfgo.ID("pods_by_app"), kopfgo.Labels{"app": kopfgo.Present})
	op.On.Create("kopfexamples", func(ctx context.Context, c *kopfgo.Change) (any, error) {
		return map[string]any{"pods": podsByApp.Get(c.Name)}, nil
	}, kopfgo.ID("report_pods"))
	fmt.Println(op.Err(), podsByApp.Len())

	kopfgo.OnIndex(op.On, "v1/services", func(ctx context.Context, o *kopfgo.Object) (map[string]bool, error) {
		return nil, nil
	}, kopfgo.ID("pods_by_app"))
	err := op.Err().Error()
	fmt.Println(err[strings.LastIndex(err, "duplicate"):])
	// Output:
	// <nil> 0
	// duplicate id "pods_by_app" (also OnIndex("v1/pods") indexer "pods_by_app" (github.com/kopfgo/kopfgo_test.ExampleOnIndex.func1)); give one of them another kopfgo.ID
}

// Memo keeps in-memory state per object and per operator; MemoValue reads
// a value back as the type it was stored with.
func ExampleMemoValue() {
	var m kopfgo.Memo
	m.Store("attempts", 3)
	n, ok := kopfgo.MemoValue[int](&m, "attempts")
	_, wrong := kopfgo.MemoValue[string](&m, "attempts")
	fmt.Println(n, ok, wrong)
	// Output:
	// 3 true false
}

// Daemons run a function per object for as long as the object exists;
// timers call one per object on a schedule. Both stop when asked: Stopped,
// Sleep and the ctx tell them.
func ExampleRegistrar_Daemon() {
	monitor := func(ctx context.Context, s *kopfgo.Spawn) (any, error) {
		for !s.Stopped() {
			s.Logger.Info("checking", "name", s.Name)
			s.Sleep(ctx, 10*time.Second) // returns early when the daemon is stopped
		}
		return nil, nil
	}
	op := kopfgo.New(quiet)
	op.On.Daemon("kopfexamples", monitor, kopfgo.ID("monitor"), kopfgo.CancellationBackoff(5*time.Second))
	op.On.Timer("kopfexamples", monitor, kopfgo.ID("ping"), kopfgo.Interval(time.Minute), kopfgo.Sharp())
	op.On.Timer("kopfexamples", monitor, kopfgo.ID("idle"))
	err := op.Err().Error()
	fmt.Println(err[strings.LastIndex(err, ": ")+2:])
	// Output:
	// a timer needs an Interval, an Idle time, or both; for a function that runs once per object, register a Daemon
}

// Validating and mutating handlers answer the API server's admission calls
// from the operator's HTTPS webhook server; with Managed, the operator keeps
// the webhook configurations itself, one webhook per handler.
func ExampleRegistrar_Validate() {
	opts := quiet
	opts.Settings.Admission = kopfgo.AdmissionSettings{Server: &kopfgo.WebhookServer{}, Managed: "auto.kopf.dev"}
	op := kopfgo.New(opts)
	op.On.Validate("kopfexamples", func(ctx context.Context, a *kopfgo.Admission) error {
		if a.Spec["field"] == "wrong" {
			return &kopfgo.AdmissionError{Message: "Change the field.", Code: 422} // kubectl shows it, with the code
		}
		a.Warnings = append(a.Warnings, "looks fine")
		return nil
	}, kopfgo.ID("check"), kopfgo.Operations("CREATE", "UPDATE"))
	op.On.Mutate("kopfexamples", func(ctx context.Context, a *kopfgo.Admission) error {
		a.Patch.Spec()["injected"] = 123 // answered as a JSON patch
		return nil
	}, kopfgo.ID("inject"), kopfgo.Labels{"app": "web"}) // the label filter is also the objectSelector
	op.On.Validate("kopfexamples", func(ctx context.Context, a *kopfgo.Admission) error { return nil },
		kopfgo.ID("bad"), kopfgo.Operations("PATCH"))
	fmt.Println(op.Err())
	// Output:
	// invalid handler registration: On.Validate("kopfexamples") handler "bad" (github.com/kopfgo/kopfgo_test.ExampleRegistrar_Validate.func3): unknown operation "PATCH": use CREATE, UPDATE, DELETE, CONNECT or *
}
