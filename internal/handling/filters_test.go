package handling

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/patch"
	"github.com/kopfgo/kopfgo/persistence"
)

func body(labels, annotations map[string]any, spec map[string]any) map[string]any {
	meta := map[string]any{"name": "kex", "namespace": "default"}
	if labels != nil {
		meta["labels"] = labels
	}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	b := map[string]any{"metadata": meta}
	if spec != nil {
		b["spec"] = spec
	}
	return b
}

func TestCheckValues(t *testing.T) {
	hasPrefix := func(v any) bool { s, ok := v.(string); return ok && strings.HasPrefix(s, "prod") }
	tests := []struct {
		name    string
		filter  any
		value   any
		present bool
		want    bool
	}{
		{"exact string", "x", "x", true, true},
		{"exact string differs", "x", "y", true, false},
		{"exact string absent", "x", nil, false, false},
		{"int literal matches int64", 3, int64(3), true, true},
		{"int literal matches float64", 3, 3.0, true, true},
		{"[]string matches []any", []string{"a", "b"}, []any{"a", "b"}, true, true},
		{"map matches", map[string]int{"a": 1}, map[string]any{"a": int64(1)}, true, true},
		{"present: empty string counts (compat: filters-markers)", handlers.Present, "", true, true},
		{"present: absent", handlers.Present, nil, false, false},
		{"absent: absent", handlers.Absent, nil, false, true},
		{"absent: present", handlers.Absent, "", true, false},
		{"callback (compat: filters-callbacks)", hasPrefix, "prod-eu", true, true},
		{"callback false", hasPrefix, "dev", true, false},
		{"callback sees nil when absent", func(v any) bool { return v == nil }, "ignored", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newCheck(tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Matches(tt.value, tt.present); got != tt.want {
				t.Errorf("Matches(%v, %v) = %v, want %v", tt.value, tt.present, got, tt.want)
			}
		})
	}
}

func TestCheckRejectsWhatCannotBeAFilter(t *testing.T) {
	for _, v := range []any{nil, handlers.Marker(7), func(string) bool { return true }, make(chan int)} {
		if _, err := newCheck(v); err == nil {
			t.Errorf("newCheck(%T) accepted it", v)
		}
	}
}

func TestLabelAndAnnotationFilters(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]any
		ann    map[string]any
		body   map[string]any
		want   bool
	}{
		{"exact (compat: filters-labels)", map[string]any{"l": "v"}, nil, body(map[string]any{"l": "v"}, nil, nil), true},
		{"exact, other value", map[string]any{"l": "v"}, nil, body(map[string]any{"l": "other"}, nil, nil), false},
		{"exact, missing", map[string]any{"l": "v"}, nil, body(nil, nil, nil), false},
		{"present, empty value", map[string]any{"l": handlers.Present}, nil, body(map[string]any{"l": ""}, nil, nil), true},
		{"absent", map[string]any{"l": handlers.Absent}, nil, body(map[string]any{"other": "x"}, nil, nil), true},
		{"absent, but present", map[string]any{"l": handlers.Absent}, nil, body(map[string]any{"l": ""}, nil, nil), false},
		{"ANDed", map[string]any{"a": "1", "b": handlers.Present}, nil, body(map[string]any{"a": "1"}, nil, nil), false},
		{"annotation", nil, map[string]any{"a": "1"}, body(map[string]any{"a": "1"}, map[string]any{"a": "1"}, nil), true},
		{"annotation is not a label", nil, map[string]any{"a": "1"}, body(map[string]any{"a": "1"}, nil, nil), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &Handler{}
			h.Filters.AddLabels(tt.labels)
			h.Filters.AddAnnotations(tt.ann)
			if err := h.Filters.Validate(false, false); err != nil {
				t.Fatal(err)
			}
			if got := h.MatchesObject(&Cause{Body: tt.body}); got != tt.want {
				t.Errorf("match = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMetaFilterValuesAreValidated(t *testing.T) {
	var f Filters
	f.AddLabels(map[string]any{"nil": nil, "int": 3, "ok": "v"})
	err := f.Validate(false, false)
	for _, want := range []string{`label filter "nil": nil is not a filter value; use kopfgo.Present or kopfgo.Absent`, `label filter "int": want a string`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to mention %q", err, want)
		}
	}
	if len(f.Labels) != 1 || f.Labels[0].Key != "ok" {
		t.Errorf("labels = %+v, want the valid one kept", f.Labels)
	}
}

// fieldHandler is a handler of the reason with a field filter.
func fieldHandler(reason causes.Reason, field string, configure func(f *Filters)) *Handler {
	h := &Handler{Reason: reason, Field: strings.Split(field, ".")}
	if configure != nil {
		configure(&h.Filters)
	}
	return h
}

func spec(kv ...any) map[string]any {
	s := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		s[kv[i].(string)] = kv[i+1]
	}
	return map[string]any{"spec": s}
}

func changeCause(reason causes.Reason, old, new map[string]any) *Cause {
	return &Cause{Reason: reason, Old: old, New: new, Diff: diffbase.Compute(old, new), Body: new}
}

// onExisting sets Handling.FieldFiltersOnExistingStates on a cause.
func onExisting(c *Cause) *Cause {
	c.Handling.FieldFiltersOnExistingStates = true
	return c
}

func TestFieldFiltersOfChangingHandlers(t *testing.T) {
	value := func(v any) func(*Filters) { return func(f *Filters) { f.SetValue(v) } }
	oldNew := func(o, n any) func(*Filters) {
		return func(f *Filters) {
			if o != nil {
				f.SetOld(o)
			}
			if n != nil {
				f.SetNew(n)
			}
		}
	}
	tests := []struct {
		name   string
		h      *Handler
		cause  *Cause
		wanted bool
	}{
		// (compat: filters-field): create, resume and delete check the old and the new state.
		{"create, value matches", fieldHandler(causes.Create, "spec.field", value("world")), changeCause(causes.Create, nil, spec("field", "world")), true},
		{"create, value differs", fieldHandler(causes.Create, "spec.field", value("world")), changeCause(causes.Create, nil, spec("field", "hello")), false},
		{"create, field alone means present", fieldHandler(causes.Create, "spec.field", nil), changeCause(causes.Create, nil, spec("field", "x")), true},
		{"create, field alone, absent", fieldHandler(causes.Create, "spec.field", nil), changeCause(causes.Create, nil, spec("other", "x")), false},
		{"create, absent matches a missing field", fieldHandler(causes.Create, "spec.no-field", value(handlers.Absent)), changeCause(causes.Create, nil, spec("field", "x")), true},
		// As in Kopf's code, the missing old essence of a creation counts as the field absent...
		{"create, absent matches a present field (the missing old state)", fieldHandler(causes.Create, "spec.field", value(handlers.Absent)), changeCause(causes.Create, nil, spec("field", "x")), true},
		{"create, a callback sees the missing old state as nil", fieldHandler(causes.Create, "spec.field", value(func(v any) bool { return v == nil })), changeCause(causes.Create, nil, spec("field", "x")), true},
		{"create, an exact value does not match the missing old state", fieldHandler(causes.Create, "spec.field", value("y")), changeCause(causes.Create, nil, spec("field", "x")), false},
		{"delete of a never-handled object, absent", fieldHandler(causes.Delete, "spec.field", value(handlers.Absent)), changeCause(causes.Delete, nil, spec("field", "x")), true},
		// ... unless Handling.FieldFiltersOnExistingStates: only the states that exist (the manual's reading).
		{"existing states: create, absent does not match a present field", fieldHandler(causes.Create, "spec.field", value(handlers.Absent)), onExisting(changeCause(causes.Create, nil, spec("field", "x"))), false},
		{"existing states: create, a callback is not called for the missing state", fieldHandler(causes.Create, "spec.field", value(func(v any) bool { return v == nil })), onExisting(changeCause(causes.Create, nil, spec("field", "x"))), false},
		{"existing states: create, absent matches a missing field", fieldHandler(causes.Create, "spec.no-field", value(handlers.Absent)), onExisting(changeCause(causes.Create, nil, spec("field", "x"))), true},
		{"existing states: update is unaffected", fieldHandler(causes.Update, "spec.field", value(handlers.Absent)), onExisting(changeCause(causes.Update, spec(), spec("field", "x"))), true},
		{"delete, old or new", fieldHandler(causes.Delete, "spec.field", value("x")), changeCause(causes.Delete, spec("field", "x"), spec("field", "y")), true},
		// (compat: filters-field-change): update and field handlers need the field to change; Value matches either side.
		{"update x→y", fieldHandler(causes.Update, "spec.field", value("x")), changeCause(causes.Update, spec("field", "x"), spec("field", "y")), true},
		{"update y→x", fieldHandler(causes.Update, "spec.field", value("x")), changeCause(causes.Update, spec("field", "y"), spec("field", "x")), true},
		{"update y→z", fieldHandler(causes.Update, "spec.field", value("x")), changeCause(causes.Update, spec("field", "y"), spec("field", "z")), false},
		{"update of another field while x", fieldHandler(causes.Update, "spec.field", value("x")), changeCause(causes.Update, spec("field", "x", "o", 1), spec("field", "x", "o", 2)), false},
		{"update adds the field", fieldHandler(causes.Update, "spec.field", nil), changeCause(causes.Update, spec(), spec("field", "x")), true},
		{"update removes the field", fieldHandler(causes.Update, "spec.field", nil), changeCause(causes.Update, spec("field", "x"), spec()), true},
		// (compat: filters-old-new): old and new, each side separately.
		{"added: old absent, new present", fieldHandler(causes.Update, "spec.field", oldNew(handlers.Absent, handlers.Present)), changeCause(causes.Update, spec(), spec("field", "x")), true},
		{"changed is not added", fieldHandler(causes.Update, "spec.field", oldNew(handlers.Absent, handlers.Present)), changeCause(causes.Update, spec("field", "w"), spec("field", "x")), false},
		{"old world, changed", fieldHandler(causes.Update, "spec.field", oldNew("world", nil)), changeCause(causes.Update, spec("field", "world"), spec("field", "x")), true},
		{"old world, removed", fieldHandler(causes.Update, "spec.field", oldNew("world", nil)), changeCause(causes.Update, spec("field", "world"), spec()), true},
		{"old world, was other", fieldHandler(causes.Update, "spec.field", oldNew("world", nil)), changeCause(causes.Update, spec("field", "a"), spec("field", "b")), false},
		{"new world reached", fieldHandler(causes.Update, "spec.field", oldNew(nil, "world")), changeCause(causes.Update, spec(), spec("field", "world")), true},
		{"numbers compare by value", fieldHandler(causes.Update, "spec.size", oldNew(1, 2)), changeCause(causes.Update, spec("size", int64(1)), spec("size", 2.0)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.h.Filters.Validate(true, tt.h.Reason == causes.Update); err != nil {
				t.Fatal(err)
			}
			if got := tt.h.matches(tt.cause); got != tt.wanted {
				t.Errorf("matches = %v, want %v", got, tt.wanted)
			}
		})
	}
}

func TestFieldFilterOfOneStateHandlersChecksTheBody(t *testing.T) {
	h := fieldHandler("", "status.phase", func(f *Filters) { f.SetValue("Running") })
	running := map[string]any{"status": map[string]any{"phase": "Running"}}
	pending := map[string]any{"status": map[string]any{"phase": "Pending"}}
	if !h.MatchesObject(&Cause{Body: running}) || h.MatchesObject(&Cause{Body: pending}) {
		t.Errorf("a one-state field filter does not check the body's field")
	}
}

func TestPrematchIgnoresFieldChanges(t *testing.T) {
	// An update handler on an unchanged field keeps the object in scope
	// (compat: filters-stealth: field changes are not part of the prematch).
	h := fieldHandler(causes.Update, "spec.field", nil)
	c := changeCause(causes.Update, spec("field", "x", "o", 1), spec("field", "x", "o", 2))
	if !Prematch([]*Handler{h}, c) {
		t.Errorf("the object is out of scope although the field is there")
	}
	if h.matches(c) {
		t.Errorf("the handler matches although its field did not change")
	}
}

func TestCallbacksRunLastAndSeeTheCause(t *testing.T) {
	calls := 0
	h := &Handler{Reason: causes.Update}
	h.Filters.AddLabels(map[string]any{"a": "1"})
	h.Filters.AddWhen(func(o *handlers.Object) bool { calls++; return o.Name == "kex" })
	h.Filters.AddWhenChange(func(c *handlers.Change) bool {
		calls++
		return c.Reason == causes.Update && len(c.Diff) == 1
	})
	out := changeCause(causes.Update, spec("f", 1), spec("f", 2))
	out.Body = body(map[string]any{"a": "2"}, nil, nil)
	if h.matches(out) || calls != 0 {
		t.Errorf("callbacks were called (%d) although the labels do not match (compat: filters-all-kinds)", calls)
	}
	in := changeCause(causes.Update, spec("f", 1), spec("f", 2))
	in.Body = body(map[string]any{"a": "1"}, nil, nil)
	if !h.matches(in) || calls != 2 {
		t.Errorf("match with %d callback calls, want a match after 2", calls)
	}
}

func TestCombinationErrors(t *testing.T) {
	tests := []struct {
		name      string
		configure func(f *Filters)
		hasField  bool
		update    bool
		want      string
	}{
		{"value and old (compat: filters-errors)", func(f *Filters) { f.SetValue(1); f.SetOld(2) }, true, true, "not both"},
		{"value without field", func(f *Filters) { f.SetValue(1) }, false, false, "need a field"},
		{"new without field", func(f *Filters) { f.SetNew(1) }, false, true, "need a field"},
		{"old on create (compat: filters-old-new)", func(f *Filters) { f.SetOld(1) }, true, false, "only be used in update and field handlers"},
		{"nil value", func(f *Filters) { f.SetValue(nil) }, true, false, "nil is not a filter value"},
		{"two fields", func(f *Filters) { f.SetField("spec.a"); f.SetField("spec.b") }, true, false, "two field filters"},
		{"nil when", func(f *Filters) { f.AddWhen(nil) }, false, false, "nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f Filters
			tt.configure(&f)
			if err := f.Validate(tt.hasField, tt.update); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestRegistrationAppliesFilterRules(t *testing.T) {
	tests := []struct {
		name   string
		reg    Registration
		wantID string
		want   string
	}{
		{"field filter suffixes the id", Registration{Resource: "kex", Reason: causes.Create, Fn: namedFn,
			Configure: func(h *Handler) { h.Filters.SetField("spec.field") }}, "namedFn/spec.field", ""},
		{"value without a field names the handler", Registration{Resource: "kex", Reason: causes.Update, Fn: namedFn,
			Configure: func(h *Handler) { h.Filters.SetValue("x") }}, "", "On.Update(\"kex\") handler"},
		{"on.field with a field option", Registration{Resource: "kex", Reason: causes.Update, IsField: true, Field: "spec.a", Fn: namedFn,
			Configure: func(h *Handler) { h.Filters.SetField("spec.b") }}, "", "remove the kopfgo.Field option"},
		{"old on delete", Registration{Resource: "kex", Reason: causes.Delete, Fn: namedFn,
			Configure: func(h *Handler) { h.Filters.SetField("spec.a"); h.Filters.SetOld("x") }}, "", "only be used in update"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Registry
			r.AddChanging(tt.reg)
			err := r.Err()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := r.Changing()[0].ID; got != tt.wantID {
					t.Errorf("id = %q, want %q", got, tt.wantID)
				}
				return
			}
			if !errors.Is(err, handlers.ErrRegistration) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "namedFn") {
				t.Errorf("err = %v, want ErrRegistration naming namedFn and mentioning %q", err, tt.want)
			}
		})
	}
}

func TestFinalizerIsRequiredOnlyWhereADeleteHandlerMatches(t *testing.T) {
	del := &Handler{Reason: causes.Delete}
	del.Filters.AddLabels(map[string]any{"guarded": handlers.Present})
	opt := &Handler{Reason: causes.Delete, Optional: true}
	hs := []*Handler{del, opt}
	guarded := &Cause{Body: body(map[string]any{"guarded": "yes"}, nil, nil)}
	free := &Cause{Body: body(nil, nil, nil)}
	if !RequiresFinalizerFor(hs, guarded) || RequiresFinalizerFor(hs, free) {
		t.Errorf("finalizer requirement ignores the delete handler's filters")
	}
}

func TestFieldIDsAllowOneFunctionForSeveralFields(t *testing.T) {
	// (compat: filters-field-ids, handlers-dedup): fn/spec.field and fn/spec.items are two handlers,
	// each with its own param and its field's old and new values.
	var r Registry
	for _, reg := range []struct{ field, param string }{{"spec.field", "fld"}, {"spec.items", "itm"}} {
		r.AddChanging(Registration{Resource: "kex", Reason: causes.Update, Fn: namedFn, Configure: func(h *Handler) {
			h.Filters.SetField(reg.field)
			h.Param = reg.param
		}})
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	old := spec("field", "a", "items", []any{"x"})
	new := spec("field", "b", "items", []any{"x", "y"})
	selected := Select(r.Changing(), changeCause(causes.Update, old, new))
	if len(selected) != 2 || selected[0].ID != "namedFn/spec.field" || selected[1].ID != "namedFn/spec.items" {
		t.Fatalf("selected %d handlers: %v", len(selected), selected)
	}
	var seen []string
	for _, h := range selected {
		h.Fn = func(ctx context.Context, c *handlers.Change) (any, error) {
			seen = append(seen, fmt.Sprintf("%v:%v->%v", c.Param, c.Old, c.New))
			return nil, nil
		}
	}
	w := newWorld(t)
	c := &Cycle{
		Reason: causes.Update, Handlers: selected, Body: w.body, Old: old, New: new, Diff: diffbase.Compute(old, new),
		Patch: &patch.Patch{}, Storage: persistence.NewAnnotationsStorage(), Clock: w.clock,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for i := 0; i < 2; i++ {
		c.Body = c.Patch.Apply(c.Body)
		c.Patch = &patch.Patch{}
		c.Run(context.Background())
	}
	if got := strings.Join(seen, " "); got != "fld:a->b itm:[x]->[x y]" {
		t.Errorf("invocations: %s", got)
	}
}
