// Package kopfgo is a Kubernetes operator framework in the style of Kopf:
// handlers are plain Go functions registered per cause (create, update,
// delete, resume, a field's change), and the framework works out what
// happened to an object by diffing it against the last handled state stored
// on the object itself.
//
// # Getting started
//
//	func Register(r kopfgo.Registrar) {
//		r.Create("kopfexamples.kopf.dev", createFn, kopfgo.Retries(5))
//		r.Field("kopfexamples", "spec.field", fieldFn)
//	}
//
//	func createFn(ctx context.Context, c *kopfgo.Change) (any, error) {
//		c.Logger.Info("creating", "spec", c.Spec)
//		return map[string]any{"message": "hello world"}, nil // status.createFn
//	}
//
// Run it with `kopfgo run ./path/to/pkg`, which calls the package's
// Register with the default operator's Registrar, kopfgo.On; or give your
// own binary the same command line with kopfgo.Main after calling
// Register(kopfgo.On). An embedded operator is kopfgo.New(opts), registered
// with Register(op.On) and run with op.Run(ctx), which blocks until ctx
// ends and owns every goroutine it starts. Registering in init() on
// kopfgo.On works too, but then merely importing the package (for its
// types, say) registers its handlers in whatever binary imports it.
//
// # Handlers
//
// A handler receives one typed struct (Change for resource-changing
// handlers) instead of Kopf's keyword arguments. Its result goes to
// status.<handler-id>. Errors: return kopfgo.Temporary(err, delay) to retry
// after a delay, kopfgo.Permanent(err) to give up for this change; any other
// error is retried after the handler's backoff (see Errors for other modes).
// A panic is an error of the handler, never a crash of the operator.
//
// Handler ids default to the function's name. Closures must be given an
// explicit ID, because the id keys the progress persisted on objects and a
// closure's Go name changes with unrelated edits.
//
// # Typed handlers and clients
//
// OnCreate, OnUpdate, OnDelete, OnResume, OnField, OnEvent, OnDaemon,
// OnTimer and OnTypedIndex register handlers that receive the object
// decoded into a Go type (a client-go typed object or a struct with JSON
// tags): TypedChange, FieldChange, TypedEvent, TypedSpawn, TypedObject;
// Decode does the same for any handler. ClientsFrom(ctx) gives every handler the operator's
// typed clientset, dynamic client and REST config, built once per run.
// FromLogr, FromZap, Logr and Zap connect the operator's slog loggers with
// logr and zap; package kopfgotest is the test kit.
//
// # Events and children
//
// Info, Warn, Exception and Event post Kubernetes Events about an object
// (the handler's c, a body, a typed object) in the background; package
// hierarchies (Adopt and its parts: Label, AppendOwnerReference,
// HarmonizeNaming, AdjustNamespace) makes the objects a handler creates its
// children, in memory, before they are created.
//
// # Filters, events, sub-handlers, indices
//
// Filters (Labels, Annotations, Field with Value, OldValue and NewValue,
// When, WhenChange) restrict any handler to matching objects; objects that
// no changing handler matches get nothing stored on them. On.Event sees
// every raw watch event, keeping no state. Execute and Subhandler split a
// changing handler into sub-handlers with progress of their own. OnIndex
// keeps a typed in-memory index of a resource's objects, complete before any
// handler runs. Memo holds per-object and per-operator state in memory.
//
// # Daemons and timers
//
// On.Daemon runs a function in a goroutine per object for as long as the
// object exists; On.Timer calls one per object on a schedule. Both receive a
// Spawn, whose Stopped, Sleep and ctx tell them to stop: stopping is
// cooperative, bounded by CancellationTimeout and Settings.Background, and
// the object keeps the operator's finalizer until they have exited.
//
// # Persistence
//
// Progress, retries and the last handled state are stored on each object in
// Kopf's own format and keys (kopf.zalando.org/…), so an operator ported from
// Kopf takes over its objects without handling them again.
//
// # Edge and level
//
// Causes are derived from the object's state, not from watch events, so
// several changes made while the operator is busy or down collapse into one
// update against the last handled state: handlers see the latest state and
// the whole difference, as in Kopf.
package kopfgo
