package handling

import (
	"strings"
	"testing"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/handlers"
)

// The filters run for every handler on every pass over every object, so
// they must cost little next to the API calls of a pass (about a
// millisecond): these measure one handler's match.

func benchCause() *Cause {
	old := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "web", "tier": "prod-eu"}},
		"spec":     map[string]any{"field": "x", "size": int64(1), "items": []any{"a", "b"}},
	}
	new := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "web", "tier": "prod-eu"}},
		"spec":     map[string]any{"field": "y", "size": int64(1), "items": []any{"a", "b"}},
	}
	b := body(map[string]any{"app": "web", "tier": "prod-eu"}, map[string]any{"owner": "me"}, new["spec"].(map[string]any))
	return &Cause{Reason: causes.Update, Old: old, New: new, Body: b}
}

func benchMatch(b *testing.B, h *Handler, want bool) {
	b.Helper()
	if err := h.Filters.Validate(len(h.Field) > 0, h.Reason == causes.Update); err != nil {
		b.Fatal(err)
	}
	c := benchCause()
	b.ReportAllocs()
	for b.Loop() {
		if h.matches(c) != want {
			b.Fatal("unexpected match result")
		}
	}
}

func BenchmarkMatchNoFilters(b *testing.B) {
	benchMatch(b, &Handler{Reason: causes.Update}, true)
}

func BenchmarkMatchLabels(b *testing.B) {
	h := &Handler{Reason: causes.Update}
	h.Filters.AddLabels(map[string]any{"app": "web", "tier": handlers.Present, "legacy": handlers.Absent})
	h.Filters.AddAnnotations(map[string]any{"owner": "me"})
	benchMatch(b, h, true)
}

func BenchmarkMatchLabelCallback(b *testing.B) {
	h := &Handler{Reason: causes.Update}
	h.Filters.AddLabels(map[string]any{"tier": func(v any) bool { s, _ := v.(string); return strings.HasPrefix(s, "prod") }})
	benchMatch(b, h, true)
}

func BenchmarkMatchFieldValue(b *testing.B) {
	h := &Handler{Reason: causes.Update, Field: []string{"spec", "field"}}
	h.Filters.SetValue("x")
	benchMatch(b, h, true)
}

func BenchmarkMatchFieldOldNew(b *testing.B) {
	h := &Handler{Reason: causes.Update, Field: []string{"spec", "field"}}
	h.Filters.SetOld("x")
	h.Filters.SetNew(handlers.Present)
	benchMatch(b, h, true)
}

func BenchmarkMatchWhen(b *testing.B) {
	// The callback's argument is built once per pass and shared by all
	// handlers; this builds it on every match, the worst case.
	h := &Handler{Reason: causes.Update}
	h.Filters.AddWhen(func(o *handlers.Object) bool { return o.Labels["app"] == "web" })
	if err := h.Filters.Validate(false, true); err != nil {
		b.Fatal(err)
	}
	c := benchCause()
	b.ReportAllocs()
	for b.Loop() {
		c.obj, c.chg = nil, nil
		if !h.matches(c) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkPrematchOutOfScope(b *testing.B) {
	// Stealth mode's cost: every handler checked and none matching.
	var hs []*Handler
	for range 5 {
		h := &Handler{Reason: causes.Create}
		h.Filters.AddLabels(map[string]any{"app": "db"})
		hs = append(hs, h)
	}
	c := benchCause()
	b.ReportAllocs()
	for b.Loop() {
		if Prematch(hs, c) {
			b.Fatal("in scope")
		}
	}
}
