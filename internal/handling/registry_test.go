package handling

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/handlers"
)

func namedFn(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil }

func otherFn(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil }

type T struct{}

func (T) Method(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil }

func TestFuncNameDerivesStableIDs(t *testing.T) {
	closure := func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil }
	tests := []struct {
		fn   any
		want string
	}{
		{handlers.ChangeFunc(namedFn), "namedFn"},
		{handlers.ChangeFunc(T{}.Method), "T.Method"},
		{handlers.ChangeFunc(closure), ""},
	}
	for _, tt := range tests {
		if _, got := funcName(tt.fn); got != tt.want {
			t.Errorf("FuncName = %q, want %q", got, tt.want)
		}
	}
}

func TestRegistrationErrorsNameTheHandler(t *testing.T) {
	tests := []struct {
		name string
		reg  Registration
		want string
	}{
		{"closure without id", Registration{Resource: "kopfexamples", Reason: causes.Create,
			Fn: func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil }}, "give it kopfgo.ID"},
		{"empty field", Registration{Resource: "kopfexamples", Reason: causes.Update, IsField: true, Fn: namedFn}, "empty field path"},
		{"bad field", Registration{Resource: "kopfexamples", Reason: causes.Update, IsField: true, Field: "spec..x", Fn: namedFn}, "empty segment"},
		{"empty resource", Registration{Resource: "", Reason: causes.Create, Fn: namedFn}, "empty resource"},
		{"bad resource", Registration{Resource: "a/b/c/d", Reason: causes.Create, Fn: namedFn}, "too many parts"},
		{"nil fn", Registration{Resource: "kopfexamples", Reason: causes.Create}, "nil"},
		{"negative retries", Registration{Resource: "kopfexamples", Reason: causes.Create, Fn: namedFn,
			Configure: func(h *Handler) { h.Retries = -1 }}, "Retries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Registry
			r.AddChanging(tt.reg)
			err := r.Err()
			if !errors.Is(err, handlers.ErrRegistration) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrRegistration mentioning %q", err, tt.want)
			}
			if tt.reg.Fn != nil && !strings.Contains(err.Error(), "On.") {
				t.Errorf("err does not name the registration: %v", err)
			}
		})
	}
}

func TestDuplicateIDs(t *testing.T) {
	var r Registry
	r.AddChanging(Registration{Resource: "kopfexamples", Reason: causes.Create, Fn: namedFn})
	r.AddChanging(Registration{Resource: "kopfexamples", Reason: causes.Create, Fn: otherFn,
		Configure: func(h *Handler) { h.ID = "namedFn" }})
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), `duplicate id "namedFn"`) {
		t.Fatalf("err = %v", err)
	}
	// The same function for create and resume is fine (deduplicated at run).
	var ok Registry
	ok.AddChanging(Registration{Resource: "kopfexamples", Reason: causes.Create, Fn: namedFn})
	ok.AddChanging(Registration{Resource: "kopfexamples", Reason: causes.Resume, Fn: namedFn})
	if err := ok.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestFieldHandlerIDAndSelection(t *testing.T) {
	var r Registry
	r.AddChanging(Registration{Resource: "kopfexamples", Reason: causes.Update, IsField: true, Field: "spec.field", Fn: namedFn})
	r.AddChanging(Registration{Resource: "kopfexamples", Reason: causes.Update, Fn: otherFn})
	r.AddChanging(Registration{Resource: "kopfexamples", Reason: causes.Resume, Fn: otherFn, Configure: func(h *Handler) { h.ID = "res" }})
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	hs := r.Changing()
	if hs[0].ID != "namedFn/spec.field" {
		t.Errorf("field handler id = %q", hs[0].ID)
	}
	ids := func(hs []*Handler) string {
		var s []string
		for _, h := range hs {
			s = append(s, h.ID)
		}
		return strings.Join(s, ",")
	}
	base := map[string]any{"spec": map[string]any{"field": "a", "other": "a"}}
	fieldChanged := map[string]any{"spec": map[string]any{"field": "b", "other": "a"}}
	otherChanged := map[string]any{"spec": map[string]any{"field": "a", "other": "b"}}
	noField := map[string]any{"spec": map[string]any{"other": "a"}}
	updatesOnly := config.Handling{FieldHandlersOnUpdatesOnly: true}
	tests := []struct {
		reason   causes.Reason
		old, new map[string]any
		initial  bool
		handling config.Handling
		want     string
	}{
		{causes.Update, base, fieldChanged, false, config.Handling{}, "namedFn/spec.field,otherFn"},
		{causes.Update, base, otherChanged, false, config.Handling{}, "otherFn"},
		{causes.Update, base, otherChanged, true, config.Handling{}, "otherFn,res"},
		{causes.Resume, base, base, true, config.Handling{}, "res"},
		// As in Kopf's code (the field handler's reason is None): a creation
		// with the field set changes the field, and so does a deletion of an
		// object whose field changed since it was last handled.
		{causes.Create, nil, fieldChanged, false, config.Handling{}, "namedFn/spec.field"},
		{causes.Create, nil, noField, false, config.Handling{}, ""},
		{causes.Delete, base, base, true, config.Handling{}, ""},
		{causes.Delete, base, fieldChanged, false, config.Handling{}, "namedFn/spec.field"},
		// The manual's reading: updates only.
		{causes.Create, nil, fieldChanged, false, updatesOnly, ""},
		{causes.Delete, base, fieldChanged, false, updatesOnly, ""},
		{causes.Update, base, fieldChanged, false, updatesOnly, "namedFn/spec.field,otherFn"},
	}
	for _, tt := range tests {
		c := &Cause{Reason: tt.reason, Initial: tt.initial, Old: tt.old, New: tt.new, Diff: diffbase.Compute(tt.old, tt.new), Handling: tt.handling}
		if got := ids(Select(hs, c)); got != tt.want {
			t.Errorf("Select(%s, initial=%v, %+v) = %q, want %q", tt.reason, tt.initial, tt.handling, got, tt.want)
		}
	}
}
