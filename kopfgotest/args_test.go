package kopfgotest_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/kopfgotest"
)

// Every untyped argument of a per-object handler: its object views, its
// reason, its old and new states and its diff, as the operator builds them.
func TestChangeArguments(t *testing.T) {
	field := func(c *kopfgo.Change, err error) *kopfgo.Change {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	essence := func(v string) map[string]any {
		return map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}, "spec": map[string]any{"field": v}}
	}
	for _, tc := range []struct {
		name     string
		c        *kopfgo.Change
		reason   kopfgo.Reason
		old, new any
		diff     diffbase.Diff
	}{
		{"create", kopfgotest.NewChange(body("x")), kopfgo.ReasonCreate, nil, essence("x"),
			diffbase.Diff{{Op: "add", Path: nil, New: essence("x")}}},
		{"update", kopfgotest.NewUpdate(body("a"), body("b")), kopfgo.ReasonUpdate, essence("a"), essence("b"),
			diffbase.Diff{{Op: "change", Path: []string{"spec", "field"}, Old: "a", New: "b"}}},
		{"delete", kopfgotest.NewDelete(body("x")), kopfgo.ReasonDelete, essence("x"), essence("x"), nil},
		{"resume", kopfgotest.NewResume(body("x")), kopfgo.ReasonResume, essence("x"), essence("x"), nil},
		{"field update", field(kopfgotest.NewFieldChange("spec.field", body("a"), body("b"))), kopfgo.ReasonUpdate, "a", "b",
			diffbase.Diff{{Op: "change", Path: []string{}, Old: "a", New: "b"}}},
		{"field create", field(kopfgotest.NewFieldChange("spec.field", nil, body("b"))), kopfgo.ReasonCreate, nil, "b",
			diffbase.Diff{{Op: "add", Path: nil, New: "b"}}},
		{"field of a map", field(kopfgotest.NewFieldChange("spec", body("a"), body("b"))), kopfgo.ReasonUpdate,
			map[string]any{"field": "a"}, map[string]any{"field": "b"},
			diffbase.Diff{{Op: "change", Path: []string{"field"}, Old: "a", New: "b"}}},
		{"absent field", field(kopfgotest.NewFieldChange("spec.other", body("a"), body("b"))), kopfgo.ReasonUpdate, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			if c.Reason != tc.reason {
				t.Errorf("reason %q, want %q", c.Reason, tc.reason)
			}
			if !reflect.DeepEqual(c.Old, tc.old) || !reflect.DeepEqual(c.New, tc.new) {
				t.Errorf("old %#v new %#v, want %#v and %#v", c.Old, c.New, tc.old, tc.new)
			}
			if len(c.Diff) != len(tc.diff) || (len(tc.diff) > 0 && !reflect.DeepEqual(c.Diff, tc.diff)) {
				t.Errorf("diff %#v, want %#v", c.Diff, tc.diff)
			}
			if c.Name != "kex" || c.Namespace != "ns" || c.Spec["field"] == nil || c.Patch == nil || c.Logger == nil || c.Memo == nil {
				t.Errorf("the object part: %+v", c.Object)
			}
		})
	}
}

func TestFieldChangeRejectsABadPath(t *testing.T) {
	if _, err := kopfgotest.NewFieldChange("spec..x", nil, body("a")); err == nil {
		t.Error("no error for an empty path segment")
	}
}

// The typed arguments, decoded as the typed handlers' adapters decode them.
func TestTypedArguments(t *testing.T) {
	tc, err := kopfgotest.NewTyped[*kex](kopfgotest.NewUpdate(body("a"), body("b")))
	if err != nil {
		t.Fatal(err)
	}
	if tc.Obj.Spec.Field != "b" || tc.Old.Spec.Field != "a" || tc.New.Spec.Field != "b" || tc.Name != "kex" {
		t.Errorf("typed change: obj %+v old %+v new %+v", tc.Obj, tc.Old, tc.New)
	}
	created, err := kopfgotest.NewTyped[*kex](kopfgotest.NewChange(body("x")))
	if err != nil || created.Old != nil || created.New.Spec.Field != "x" {
		t.Errorf("typed create: %v, old %+v new %+v", err, created.Old, created.New)
	}

	// The typed handler writes into the untyped argument's patch.
	c := kopfgotest.NewChange(body("x"))
	typed, err := kopfgotest.NewTyped[*kex](c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := createFn(context.Background(), typed); err != nil {
		t.Fatal(err)
	}
	if c.Patch.Status()["seen"] != "x" {
		t.Errorf("patch %v", c.Patch.Map())
	}

	fc, err := kopfgotest.NewFieldChange("spec.field", body("a"), body("b"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := kopfgotest.NewTypedField[*kex, string](fc)
	if err != nil || f.Old != "a" || f.New != "b" || f.Obj.Spec.Field != "b" {
		t.Errorf("typed field: %v, %q → %q, obj %+v", err, f.Old, f.New, f.Obj)
	}

	bad := body("x")
	bad["spec"] = map[string]any{"field": 5}
	var de *kopfgo.DecodeError
	if _, err := kopfgotest.NewTyped[*kex](kopfgotest.NewChange(bad)); !errors.As(err, &de) || de.Field != "spec.field" {
		t.Errorf("a body that does not decode: %v", err)
	}
}

func TestEventArgument(t *testing.T) {
	for _, tc := range []struct {
		typ kopfgo.EventType
		raw any
	}{{kopfgo.EventListed, nil}, {kopfgo.EventAdded, "ADDED"}, {kopfgo.EventDeleted, "DELETED"}} {
		e := kopfgotest.NewEvent(tc.typ, body("x"))
		if e.Type != tc.typ || e.Raw["type"] != tc.raw || e.Raw["object"].(map[string]any)["spec"] == nil || e.Name != "kex" || e.Patch == nil {
			t.Errorf("%q: %+v", tc.typ, e)
		}
		obj, err := kopfgo.Decode[*kex](e)
		if err != nil || obj.Spec.Field != "x" {
			t.Errorf("%q: decoded %+v, %v", tc.typ, obj, err)
		}
	}
}

func TestIndexArgument(t *testing.T) {
	byField := func(ctx context.Context, o *kopfgo.Object) (map[string]string, error) {
		return map[string]string{o.Spec["field"].(string): o.Name}, nil
	}
	got, err := byField(context.Background(), kopfgotest.NewObject(body("x")))
	if err != nil || got["x"] != "kex" {
		t.Errorf("index entries %v, %v", got, err)
	}
}

func TestAdmissionArgument(t *testing.T) {
	for _, tc := range []struct {
		op       string
		old, new map[string]any
		object   string
		diffLen  int
	}{
		{"CREATE", nil, body("n"), "n", 1},
		{"UPDATE", body("o"), body("n"), "n", 1},
		{"DELETE", body("o"), nil, "o", 1},
	} {
		a := kopfgotest.NewAdmission(tc.op, tc.old, tc.new)
		if a.Operation != tc.op || a.Spec["field"] != tc.object || len(a.Diff) != tc.diffLen || a.Patch == nil || a.Kind == "" || a.UserInfo == nil {
			t.Errorf("%s: %+v", tc.op, a)
		}
		if (a.Old == nil) != (tc.old == nil) || (a.New == nil) != (tc.new == nil) {
			t.Errorf("%s: old %v new %v", tc.op, a.Old, a.New)
		}
	}
}

func TestActivityArgument(t *testing.T) {
	a := kopfgotest.NewActivity()
	if a.Kind == "" || a.Logger == nil || a.Memo == nil || a.Settings == nil || a.Started.IsZero() {
		t.Errorf("%+v", a)
	}
}
