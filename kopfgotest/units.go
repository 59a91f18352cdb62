package kopfgotest

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/patch"
)

// The unit helpers build the argument a handler receives from a body, as
// the operator builds it: Spec, Meta, Status, Name, Namespace, Labels and
// the rest are views into the body; Patch is empty, Memo is new, Logger
// discards (set c.Logger to see the handler's lines). Call the handler as a
// plain function, then read what it did: its result and error, and
// c.Patch.Map() for what it wrote into the patch (the operator applies it
// as a merge patch, with the result under status.<handler-id>).

func newObject(body map[string]any) kopfgo.Object {
	o := handlers.NewObject(body, resources.Resource{}, &patch.Patch{}, slog.New(slog.DiscardHandler))
	o.Memo = &kopfgo.Memo{}
	return o
}

// NewChange builds the argument of a create handler (Reason create, New the
// object's essence, Old absent); set Reason for resume or delete handlers.
func NewChange(body map[string]any) *kopfgo.Change {
	essence := diffbase.Default().Build(body, nil)
	return &kopfgo.Change{
		Object:  newObject(body),
		Attempt: kopfgo.Attempt{Started: time.Now()},
		Reason:  kopfgo.ReasonCreate,
		Diff:    diffbase.Compute(nil, essence),
		New:     essence,
	}
}

// NewUpdate builds the argument of an update handler for an object changed
// from old to new: Old and New are their essences, Diff the difference in
// Kopf's format, the object is new.
func NewUpdate(old, new map[string]any) *kopfgo.Change {
	storage := diffbase.Default()
	o, n := storage.Build(old, nil), storage.Build(new, nil)
	return &kopfgo.Change{
		Object:  newObject(new),
		Attempt: kopfgo.Attempt{Started: time.Now()},
		Reason:  kopfgo.ReasonUpdate,
		Diff:    diffbase.Compute(o, n),
		Old:     o,
		New:     n,
	}
}

// NewDelete builds the argument of a delete handler for an object handled
// before in this state: Old and New are its essence, Diff is empty.
func NewDelete(body map[string]any) *kopfgo.Change {
	return unchanged(body, kopfgo.ReasonDelete)
}

// NewResume builds the argument of a resume handler (the operator's start
// with the object handled before, unchanged since): as NewDelete's.
func NewResume(body map[string]any) *kopfgo.Change {
	return unchanged(body, kopfgo.ReasonResume)
}

func unchanged(body map[string]any, reason kopfgo.Reason) *kopfgo.Change {
	essence := diffbase.Default().Build(body, nil)
	return &kopfgo.Change{
		Object:  newObject(body),
		Attempt: kopfgo.Attempt{Started: time.Now()},
		Reason:  reason,
		Old:     essence,
		New:     essence,
	}
}

// NewFieldChange builds the argument of a field handler of field (a dotted
// path, as given to On.Field or kopfgo.Field) for an object changed from old
// to new, or created as new when old is nil: Old and New are the field's
// values (nil when absent), Diff the difference within the field with paths
// relative to it, as the operator gives them.
func NewFieldChange(field string, old, new map[string]any) (*kopfgo.Change, error) {
	path, err := dicts.ParsePath(field)
	if err != nil {
		return nil, err
	}
	c := NewChange(new)
	if old != nil {
		c = NewUpdate(old, new)
	}
	c.Old, _ = dicts.Get(c.Old, path)
	c.New, _ = dicts.Get(c.New, path)
	c.Diff = c.Diff.Reduce(path)
	return c, nil
}

// NewTyped builds the argument of a typed handler (kopfgo.OnCreate and its
// siblings) from an untyped one made by NewChange, NewUpdate, NewDelete or
// NewResume, decoding the object and its old and new essences into T as
// the operator does; a body that does not decode is the *kopfgo.DecodeError
// the handler's run would fail with. The typed argument shares c's Patch.
func NewTyped[T any](c *kopfgo.Change) (*kopfgo.TypedChange[T], error) {
	var arg *kopfgo.TypedChange[T]
	_, err := kopfgo.Typed(func(_ context.Context, tc *kopfgo.TypedChange[T]) (any, error) {
		arg = tc
		return nil, nil
	})(context.Background(), c)
	return arg, err
}

// NewTypedField builds the argument of a typed field handler
// (kopfgo.OnField) from one made by NewFieldChange: the object decoded into
// T, the field's old and new values into V.
func NewTypedField[T, V any](c *kopfgo.Change) (*kopfgo.FieldChange[T, V], error) {
	var arg *kopfgo.FieldChange[T, V]
	_, err := kopfgo.TypedField(func(_ context.Context, fc *kopfgo.FieldChange[T, V]) (any, error) {
		arg = fc
		return nil, nil
	})(context.Background(), c)
	return arg, err
}

// NewEvent builds the argument of an event handler (On.Event) for a watch
// event of type typ (kopfgo.EventListed for the initial listing) carrying
// body.
func NewEvent(typ kopfgo.EventType, body map[string]any) *kopfgo.WatchEvent {
	var raw any = string(typ)
	if typ == kopfgo.EventListed {
		raw = nil // Kopf's None
	}
	return &kopfgo.WatchEvent{
		Object: newObject(body),
		Type:   typ,
		Raw:    map[string]any{"type": raw, "object": body},
	}
}

// NewObject builds the argument of an index function (kopfgo.NewIndex).
func NewObject(body map[string]any) *kopfgo.Object {
	o := newObject(body)
	return &o
}

// NewAdmission builds the argument of a validating handler for a request of
// operation ("CREATE", "UPDATE", "DELETE") from old to new (nil when the
// request has none): Object is new, or old for DELETE; Diff is between the
// whole bodies, as in the webhook. Set Kind to handlers.Mutating for a
// mutating handler, and UserInfo, DryRun and the rest as the test needs; the
// mutations go into a.Patch.
func NewAdmission(operation string, old, new map[string]any) *kopfgo.Admission {
	body := new
	if body == nil {
		body = old
	}
	a := &kopfgo.Admission{
		Object: newObject(body), Old: old, New: new,
		Operation: operation, Kind: handlers.Validating, UserInfo: map[string]any{},
	}
	if old != nil || new != nil {
		a.Diff = diffbase.Compute(orNil(old), orNil(new))
	}
	return a
}

// orNil keeps a nil map from becoming a non-nil interface.
func orNil(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

// NewSpawn builds the argument of a daemon or timer, whose Sleep runs on clk
// (a k8s.io/utils/clock/testing fake clock steps it; nil: the real clock).
// Live returns the body. The control stops the daemon and keeps what it
// applied with ApplyPatch.
func NewSpawn(body map[string]any, clk clock.Clock) (*kopfgo.Spawn, *SpawnControl) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	ctl := &SpawnControl{stopper: handling.NewStopper(), applied: &patch.Patch{}}
	s := handlers.NewSpawn(newObject(body), kopfgo.Attempt{Started: time.Now()}, handlers.SpawnEnv{
		Stopper: ctl.stopper,
		Clock:   clk,
		Live:    func() (map[string]any, bool) { return body, true },
		Apply: func(ctx context.Context, p *patch.Patch) error {
			ctl.mu.Lock()
			defer ctl.mu.Unlock()
			ctl.applied.Merge(p)
			return nil
		},
	})
	return s, ctl
}

// SpawnControl drives a Spawn made by NewSpawn.
type SpawnControl struct {
	stopper *handling.Stopper
	mu      sync.Mutex
	applied *patch.Patch
}

// Stop asks the daemon to stop, as the operator's exit does (Stopped,
// Stopping and Sleep see it; the reason is kopfgo.ErrOperatorExiting).
func (c *SpawnControl) Stop() { c.stopper.Stop(kopfgo.ErrOperatorExiting) }

// Applied is what the daemon sent with ApplyPatch so far, merged; what it
// left in its Patch is in s.Patch.
func (c *SpawnControl) Applied() map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &patch.Patch{}
	out.Merge(c.applied)
	return out.Map()
}

// NewActivity builds the argument of a startup, cleanup or probe handler,
// with default settings and a new operator memo; set Kind for a handler
// that reads it.
func NewActivity() *kopfgo.Activity {
	return &kopfgo.Activity{
		Kind:     handlers.Startup,
		Attempt:  kopfgo.Attempt{Started: time.Now()},
		Logger:   slog.New(slog.DiscardHandler),
		Memo:     &kopfgo.Memo{},
		Settings: &kopfgo.Settings{},
	}
}
