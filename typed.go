package kopfgo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"weak"

	kjson "sigs.k8s.io/json"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/handling"
)

// TypedChange is the argument of a typed create, update, delete or resume
// handler: the untyped Change (Body, Patch, Logger, Diff, Reason, …) and
// the object decoded into T, a client-go typed object (*corev1.Pod) or a
// struct of your own with JSON tags.
//
// Obj is decoded once per pass and shared by the pass's typed handlers of
// the same T: treat it as read-only, as Body is (DeepCopy a client-go object
// before changing it). Old and New shadow Change.Old and Change.New: the
// essences before and after an update, decoded into T (zero when absent:
// on creation Old, on deletion New). The untyped ones stay reachable as
// c.Change.Old and c.Change.New.
type TypedChange[T any] struct {
	*Change
	Obj      T
	Old, New T

	keep any // the decoded box, kept alive while the handler runs (see decodeBody)
}

// FieldChange is the argument of a typed field handler: the object decoded
// into T, and the field's old and new values decoded into V (zero when
// absent; use a pointer V to tell absent from zero).
type FieldChange[T, V any] struct {
	*Change
	Obj      T
	Old, New V

	keep any
}

// TypedSpawn is the argument of a typed daemon or timer: the untyped Spawn
// (Stopped, Sleep, Live, Patch, …) and its object decoded into T at the
// start of the invocation, as Spawn.Object is (Live() has the latest body;
// Decode it for the latest T). Treat Obj as read-only, as TypedChange's.
type TypedSpawn[T any] struct {
	*Spawn
	Obj T

	keep any
}

// TypedEvent is the argument of a typed event handler: the untyped
// WatchEvent (Type, Raw, Patch, …) and the event's object decoded into T.
type TypedEvent[T any] struct {
	*WatchEvent
	Obj T

	keep any
}

// TypedObject is the argument of a typed indexing function: the untyped
// Object and the object decoded into T.
type TypedObject[T any] struct {
	*Object
	Obj T

	keep any
}

// Typed adapts a typed handler to a ChangeFunc, for the places that take
// one (Execute, Subhandler, On.Create with an explicit ID). The adapter has
// no name of its own: register with OnCreate and its siblings to keep the
// id derived from fn's name.
//
// A body that does not decode into T is an error of the handler (a
// *DecodeError naming the field), retried and reported as any other error
// per the handler's Errors, Retries and Backoff; the object is left as it is.
//
// A typed handler's result goes to status.<handler-id> as an untyped
// handler's does; a struct is marshalled by its JSON tags first, so that it
// is merged there as a map. The same holds for typed daemons, timers and
// event handlers.
func Typed[T any](fn func(context.Context, *TypedChange[T]) (any, error)) ChangeFunc {
	if fn == nil {
		return nil
	}
	return func(ctx context.Context, c *Change) (any, error) {
		tc := &TypedChange[T]{Change: c}
		var err error
		if tc.Obj, tc.keep, err = decodeBody[T](c.Body); err != nil {
			return nil, err
		}
		if tc.Old, err = decodeState[T](c, c.Old, "old"); err != nil {
			return nil, err
		}
		if tc.New, err = decodeState[T](c, c.New, "new"); err != nil {
			return nil, err
		}
		return typedResult(fn(ctx, tc))
	}
}

// TypedField adapts a typed field handler to a ChangeFunc (see Typed).
func TypedField[T, V any](fn func(context.Context, *FieldChange[T, V]) (any, error)) ChangeFunc {
	if fn == nil {
		return nil
	}
	return func(ctx context.Context, c *Change) (any, error) {
		fc := &FieldChange[T, V]{Change: c}
		var err error
		if fc.Obj, fc.keep, err = decodeBody[T](c.Body); err != nil {
			return nil, err
		}
		if fc.Old, err = decodeState[V](c, c.Old, "old"); err != nil {
			return nil, err
		}
		if fc.New, err = decodeState[V](c, c.New, "new"); err != nil {
			return nil, err
		}
		return typedResult(fn(ctx, fc))
	}
}

// OnCreate registers a typed create handler on r (kopfgo.On or op.On); the
// id derives from fn's name as On.Create's does.
func OnCreate[T any](r Registrar, resource string, fn func(context.Context, *TypedChange[T]) (any, error), opts ...ChangeOption) {
	r.add(resource, causes.Create, "", false, Typed(fn), fn, changeConfig(opts))
}

// OnUpdate registers a typed update handler (see Registrar.Update).
func OnUpdate[T any](r Registrar, resource string, fn func(context.Context, *TypedChange[T]) (any, error), opts ...ChangeOption) {
	r.add(resource, causes.Update, "", false, Typed(fn), fn, changeConfig(opts))
}

// OnDelete registers a typed delete handler (see Registrar.Delete).
func OnDelete[T any](r Registrar, resource string, fn func(context.Context, *TypedChange[T]) (any, error), opts ...ChangeOption) {
	r.add(resource, causes.Delete, "", false, Typed(fn), fn, changeConfig(opts))
}

// OnResume registers a typed resume handler (see Registrar.Resume).
func OnResume[T any](r Registrar, resource string, fn func(context.Context, *TypedChange[T]) (any, error), opts ...ChangeOption) {
	r.add(resource, causes.Resume, "", false, Typed(fn), fn, changeConfig(opts))
}

// OnField registers a typed field handler (see Registrar.Field): the field's
// old and new values are decoded into V.
func OnField[T, V any](r Registrar, resource, field string, fn func(context.Context, *FieldChange[T, V]) (any, error), opts ...ChangeOption) {
	r.add(resource, causes.Update, field, true, TypedField(fn), fn, changeConfig(opts))
}

// OnEvent registers a typed event handler (see Registrar.Event). An event
// whose object does not decode into T is logged as the handler's error, as
// event handlers' errors are, and skipped.
func OnEvent[T any](r Registrar, resource string, fn func(context.Context, *TypedEvent[T]) (any, error), opts ...FilterOption) {
	r.event(resource, typedEvent(fn), fn, opts)
}

// OnDaemon registers a typed daemon (see Registrar.Daemon). An object that
// does not decode into T fails the invocation, retried per the daemon's
// Errors, Retries and Backoff as any error.
func OnDaemon[T any](r Registrar, resource string, fn func(context.Context, *TypedSpawn[T]) (any, error), opts ...SpawnOption) {
	r.spawn(handling.KindDaemon, resource, typedSpawn(fn), fn, opts)
}

// OnTimer registers a typed timer (see Registrar.Timer and OnDaemon).
func OnTimer[T any](r Registrar, resource string, fn func(context.Context, *TypedSpawn[T]) (any, error), opts ...SpawnOption) {
	r.spawn(handling.KindTimer, resource, typedSpawn(fn), fn, opts)
}

// OnTypedIndex registers a typed index (see OnIndex and IndexFunc): fn gets
// the object decoded into T. An object that does not decode is an error of the
// indexing function, treated per its errors mode as OnIndex says.
func OnTypedIndex[T any, K comparable, V any](r Registrar, resource string, fn func(context.Context, *TypedObject[T]) (map[K]V, error), opts ...IndexOption) *Index[K, V] {
	return index(r, resource, typedIndex(fn), fn, opts)
}

func typedIndex[T any, K comparable, V any](fn func(context.Context, *TypedObject[T]) (map[K]V, error)) IndexFunc[K, V] {
	if fn == nil {
		return nil
	}
	return func(ctx context.Context, o *Object) (map[K]V, error) {
		to := &TypedObject[T]{Object: o}
		var err error
		if to.Obj, to.keep, err = decodeBody[T](o.Body); err != nil {
			return nil, err
		}
		return fn(ctx, to)
	}
}

func typedSpawn[T any](fn func(context.Context, *TypedSpawn[T]) (any, error)) SpawnFunc {
	if fn == nil {
		return nil
	}
	return func(ctx context.Context, s *Spawn) (any, error) {
		ts := &TypedSpawn[T]{Spawn: s}
		var err error
		if ts.Obj, ts.keep, err = decodeBody[T](s.Body); err != nil {
			return nil, err
		}
		return typedResult(fn(ctx, ts))
	}
}

func typedEvent[T any](fn func(context.Context, *TypedEvent[T]) (any, error)) EventFunc {
	if fn == nil {
		return nil
	}
	return func(ctx context.Context, e *WatchEvent) (any, error) {
		te := &TypedEvent[T]{WatchEvent: e}
		var err error
		if te.Obj, te.keep, err = decodeBody[T](e.Body); err != nil {
			return nil, err
		}
		return typedResult(fn(ctx, te))
	}
}

// Decode returns the handler's object decoded into T, for untyped handlers,
// daemons, timers, event handlers and indexing functions: obj, err := kopfgo.Decode[*MyCR](c).
// It shares the typed handlers' per-pass decoding (see TypedChange).
func Decode[T any, A *Change | *Spawn | *WatchEvent | *Object](a A) (T, error) {
	var body map[string]any
	switch x := any(a).(type) {
	case *Change:
		body = x.Body
	case *Spawn:
		body = x.Body
	case *WatchEvent:
		body = x.Body
	case *Object:
		body = x.Body
	}
	v, _, err := decodeBody[T](body)
	return v, err
}

// DecodeError is the error of a typed handler whose object (or old or new
// state) does not decode into its Go type: Field is the dotted path of the
// offending field when the decoder names one.
type DecodeError struct {
	Type  string // the Go type, e.g. "*v1.KopfExample"
	State string // "object", "old" or "new"
	Field string // e.g. "spec.replicas"; "" when unknown
	Err   error
}

func (e *DecodeError) Error() string {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(e.Err, &te) && e.Field != "":
		return fmt.Sprintf("the %s does not decode into %s: field %s: a JSON %s where %s is expected", e.State, e.Type, e.Field, te.Value, te.Type)
	case e.Field != "":
		return fmt.Sprintf("the %s does not decode into %s: field %s: %v", e.State, e.Type, e.Field, e.Err)
	}
	return fmt.Sprintf("the %s does not decode into %s: %v", e.State, e.Type, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// decoded is one object decoded into T. It holds the body it came from, so
// that while it is alive the body's address cannot be reused by another map
// and the cache's identity check is exact.
type decoded[T any] struct {
	body map[string]any
	v    T
}

type decodeKey struct {
	body uintptr
	typ  reflect.Type
}

// decodeCache maps a body (by identity) and a type to a weak pointer to its
// decoding. The handlers of one pass see the same body map, so each typed
// handler after the first reuses the first one's decoding; nothing keeps it
// beyond the handlers that hold it (TypedChange.keep), so typed handlers do
// not add a decoded copy of every object to the operator's memory. An entry
// goes with its decoding (runtime.AddCleanup).
var decodeCache sync.Map // decodeKey → weak.Pointer[decoded[T]]

func decodeBody[T any](body map[string]any) (T, *decoded[T], error) {
	key := decodeKey{reflect.ValueOf(body).Pointer(), reflect.TypeFor[T]()}
	if w, ok := decodeCache.Load(key); ok {
		if d := w.(weak.Pointer[decoded[T]]).Value(); d != nil && sameMap(d.body, body) {
			return d.v, d, nil
		}
	}
	d := &decoded[T]{body: body}
	if err := decodeValue(body, &d.v, "object"); err != nil {
		var zero T
		return zero, nil, err
	}
	w := weak.Make(d)
	decodeCache.Store(key, w)
	runtime.AddCleanup(d, func(k decodeKey) { decodeCache.CompareAndDelete(k, w) }, key)
	return d.v, d, nil
}

func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer()
}

// decodeState decodes an old or new state (an essence or a field's value);
// absent is the zero value. An old state that no longer decodes (the type
// has changed since it was stored, or the change being handled fixes a
// wrong type) is logged and left zero: failing on it would keep the handler
// from ever handling the fix. A new state that does not decode fails.
func decodeState[T any](c *Change, raw any, state string) (T, error) {
	var v T
	if raw == nil {
		return v, nil
	}
	err := decodeValue(raw, &v, state)
	if err != nil && state == "old" {
		if c.Logger != nil {
			c.Logger.Warn(fmt.Sprintf("The old state is left empty: %v", err))
		}
		var zero T
		return zero, nil
	}
	return v, err
}

// decodeValue decodes an untyped value into *out as Kubernetes decodes
// objects: field names are case-sensitive, integers stay integers.
func decodeValue[T any](raw any, out *T, state string) error {
	data, err := json.Marshal(raw)
	if err == nil {
		err = kjson.UnmarshalCaseSensitivePreserveInts(data, out)
	}
	if err == nil {
		return nil
	}
	de := &DecodeError{Type: reflect.TypeFor[T]().String(), State: state, Err: err}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		de.Field = te.Field
	}
	return de
}

// typedResult turns a typed handler's result into what the engine stores:
// maps, strings, numbers and booleans as they are, anything else (a struct,
// a pointer to one) marshalled by its JSON tags into maps and values.
func typedResult(res any, err error) (any, error) {
	switch res.(type) {
	case nil, map[string]any, string, bool, int, int32, int64, float64:
		return res, err
	}
	if v := reflect.ValueOf(res); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, err
	}
	data, merr := json.Marshal(res)
	if merr != nil {
		return nil, errors.Join(err, fmt.Errorf("the result of type %T cannot be stored: %w", res, merr))
	}
	var out any
	if uerr := kjson.UnmarshalCaseSensitivePreserveInts(data, &out); uerr != nil {
		return nil, errors.Join(err, fmt.Errorf("the result of type %T cannot be stored: %w", res, uerr))
	}
	return out, err
}
