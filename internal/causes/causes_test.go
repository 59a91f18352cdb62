package causes

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/patch"
)

const ourFinalizer = "kopf.zalando.org/KopfFinalizerMarker"

// The factors of cause detection, crossed as in Kopf's
// tests/causation/test_detection.py.
var (
	gones      = []bool{false, true}
	deletions  = []string{"unset", "null", "set"}
	finalizerz = []string{"none", "own", "others", "mixed"}
	diffbases  = []string{"absent", "equal", "different"}
	initials   = []bool{false, true}
)

type factors struct {
	gone      bool
	deletion  string
	finalizer string
	diffbase  string
	initial   bool
}

func (f factors) String() string {
	return fmt.Sprintf("gone=%v/deletion=%s/finalizers=%s/diffbase=%s/initial=%v",
		f.gone, f.deletion, f.finalizer, f.diffbase, f.initial)
}

// input builds a real body and runs the real storage, so that the test
// covers what the reactor does: Fetch, Build, Compute, Detect.
func (f factors) input(t testing.TB) Input {
	t.Helper()
	meta := map[string]any{"name": "kex", "resourceVersion": "42"}
	switch f.deletion {
	case "null":
		meta["deletionTimestamp"] = nil
	case "set":
		meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
	}
	switch f.finalizer {
	case "own":
		meta["finalizers"] = []any{ourFinalizer}
	case "others":
		meta["finalizers"] = []any{"irrelevant", "another"}
	case "mixed":
		meta["finalizers"] = []any{"irrelevant", ourFinalizer, "another"}
	}
	body := map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": meta,
		"spec":     map[string]any{"field": "value"},
		"status":   map[string]any{"written": "by the operator itself"},
	}
	storage := diffbase.Default()
	switch f.diffbase {
	case "equal":
		var p patch.Patch
		storage.Store(body, &p, storage.Build(body, nil))
		body = p.Apply(body)
	case "different":
		var p patch.Patch
		storage.Store(body, &p, map[string]any{"spec": map[string]any{"field": "other"}})
		body = p.Apply(body)
	}
	old, err := storage.Fetch(body)
	if err != nil {
		t.Fatal(err)
	}
	new := storage.Build(body, nil)
	return Input{
		Gone:      f.gone,
		Body:      body,
		Finalizer: ourFinalizer,
		Old:       old,
		New:       new,
		Diff:      diffbase.Compute(old, new),
		Initial:   f.initial,
	}
}

func cross() []factors {
	var all []factors
	for _, g := range gones {
		for _, d := range deletions {
			for _, fz := range finalizerz {
				for _, db := range diffbases {
					for _, i := range initials {
						all = append(all, factors{g, d, fz, db, i})
					}
				}
			}
		}
	}
	return all
}

func oneOf[T comparable](v T, set ...T) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}

// Each group is one of Kopf's test functions: the subset of the cross it
// selects, and the reason it expects there. The groups must partition the
// cross: a case in two groups, or in none, fails the test.
var groups = []struct {
	reason Reason
	match  func(f factors) bool
}{
	// Kopf's test_for_gone: whatever else holds.
	{Gone, func(f factors) bool { return f.gone }},
	// test_for_free: deleted, and we hold no finalizer.
	{Free, func(f factors) bool {
		return !f.gone && f.deletion == "set" && oneOf(f.finalizer, "none", "others")
	}},
	// test_for_delete: deleted, and we hold the finalizer; the diff-base
	// and the initial listing do not matter.
	{Delete, func(f factors) bool {
		return !f.gone && f.deletion == "set" && oneOf(f.finalizer, "own", "mixed")
	}},
	// test_for_create: never handled, even when in the initial listing.
	{Create, func(f factors) bool {
		return !f.gone && f.deletion != "set" && f.diffbase == "absent"
	}},
	// Resume: handled before, unchanged, seen in the initial listing.
	{Resume, func(f factors) bool {
		return !f.gone && f.deletion != "set" && f.diffbase == "equal" && f.initial
	}},
	// test_for_no_op.
	{Noop, func(f factors) bool {
		return !f.gone && f.deletion != "set" && f.diffbase == "equal" && !f.initial
	}},
	// test_for_update: changed; in the initial listing too (resume
	// handlers mix into the update cycle; compat: handlers-resume).
	{Update, func(f factors) bool {
		return !f.gone && f.deletion != "set" && f.diffbase == "different"
	}},
}

func TestDetect(t *testing.T) {
	all := cross()
	if len(all) != 2*3*4*3*2 {
		t.Fatalf("cross has %d cases", len(all))
	}
	for _, f := range all {
		t.Run(f.String(), func(t *testing.T) {
			var want []Reason
			for _, g := range groups {
				if g.match(f) {
					want = append(want, g.reason)
				}
			}
			if len(want) != 1 {
				t.Fatalf("the case is in %d groups (%v), want exactly 1", len(want), want)
			}
			if got := Detect(f.input(t)); got != want[0] {
				t.Errorf("Detect = %s, want %s", got, want[0])
			}
		})
	}
}

func TestDetectEmptyStoredEssenceIsNotCreation(t *testing.T) {
	// An object whose essence is empty was handled: a stored "{}" is not
	// an absent diff-base.
	in := Input{Body: map[string]any{}, Old: map[string]any{}, New: map[string]any{}}
	if got := Detect(in); got != Noop {
		t.Errorf("Detect = %s, want noop", got)
	}
}

func TestDetectStatusOnlyChangeIsNoop(t *testing.T) {
	// (compat: persistence-essence): a status patch does not form a cause.
	f := factors{deletion: "unset", finalizer: "own", diffbase: "equal"}
	in := f.input(t)
	in.Body["status"] = map[string]any{"x": "changed"}
	in.Body["metadata"].(map[string]any)["resourceVersion"] = "43"
	in.New = diffbase.Default().Build(in.Body, nil)
	in.Diff = diffbase.Compute(in.Old, in.New)
	if got := Detect(in); got != Noop {
		t.Errorf("Detect = %s, want noop (diff %v)", got, in.Diff)
	}
}

func TestReasonTitle(t *testing.T) {
	tests := map[Reason]string{
		Create: "Creation", Update: "Updating", Delete: "Deletion", Resume: "Resuming",
		Noop: "Noop", Free: "Free", Gone: "Gone", Reason("other"): "other",
	}
	for r, want := range tests {
		if got := r.Title(); got != want {
			t.Errorf("%s.Title() = %q, want %q", r, got, want)
		}
	}
	// Kopf's log lines, e.g. "Creation is processed: 1 succeeded; 0 failed."
	if got := Create.Title() + " is in progress"; got != "Creation is in progress" {
		t.Error(got)
	}
	if got := Resume.Title() + " is superseded by " + strings.ToLower(Update.Title()); got != "Resuming is superseded by updating" {
		t.Error(got)
	}
}

func TestReasonForHandlers(t *testing.T) {
	for _, r := range []Reason{Create, Update, Delete, Resume} {
		if !r.ForHandlers() {
			t.Errorf("%s is for handlers", r)
		}
	}
	for _, r := range []Reason{Noop, Free, Gone} {
		if r.ForHandlers() {
			t.Errorf("%s is not for handlers", r)
		}
	}
}
