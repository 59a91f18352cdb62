package kopfgo

import (
	"context"
	"strings"
	"testing"
)

type typedThing struct {
	Spec struct {
		Field string `json:"field"`
	} `json:"spec"`
}

func typedCreateFn(ctx context.Context, c *TypedChange[typedThing]) (any, error) { return nil, nil }
func typedFieldFn(ctx context.Context, c *FieldChange[typedThing, string]) (any, error) {
	return nil, nil
}

// Typed handlers are named after the user's function, not the adapter they
// share; a closure needs an ID as an untyped one does.
func TestTypedHandlersAreNamedAfterTheirFunction(t *testing.T) {
	op := New(Options{})
	OnCreate(op.On, "kex", typedCreateFn)
	OnField(op.On, "kex", "spec.field", typedFieldFn)
	OnUpdate(op.On, "kex", typedCreateFn, ID("upd"))
	if err := op.Err(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range op.reg.Changing() {
		ids = append(ids, h.ID)
	}
	if got, want := strings.Join(ids, ","), "typedCreateFn,typedFieldFn/spec.field,upd"; got != want {
		t.Fatalf("ids %s, want %s", got, want)
	}
	op = New(Options{})
	OnCreate(op.On, "kex", func(ctx context.Context, c *TypedChange[typedThing]) (any, error) { return nil, nil })
	if err := op.Err(); err == nil || !strings.Contains(err.Error(), "kopfgo.ID") {
		t.Fatalf("a typed closure without an id: %v", err)
	}
}
