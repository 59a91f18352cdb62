package handling

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/tracing"
	"github.com/kopfgo/kopfgo/patch"
	"github.com/kopfgo/kopfgo/persistence"
)

// The reactor selects handlers and runs a cycle for every event with a
// cause: these are the per-event costs of the handling engine.

func benchRegistry(b *testing.B) []*Handler {
	reg := &Registry{}
	fn := func(context.Context, *handlers.Change) (any, error) { return nil, nil }
	for _, r := range []Registration{
		{Resource: "kopfexamples", Reason: causes.Create, Fn: fn, Configure: func(h *Handler) { h.ID = "create_fn" }},
		{Resource: "kopfexamples", Reason: causes.Update, Fn: fn, Configure: func(h *Handler) { h.ID = "update_fn" }},
		{Resource: "kopfexamples", Reason: causes.Update, Field: "spec.field", IsField: true, Fn: fn, Configure: func(h *Handler) { h.ID = "field_fn" }},
		{Resource: "kopfexamples", Reason: causes.Update, Field: "metadata.labels.app", IsField: true, Fn: fn, Configure: func(h *Handler) { h.ID = "label_fn" }},
		{Resource: "kopfexamples", Reason: causes.Delete, Fn: fn, Configure: func(h *Handler) { h.ID = "delete_fn" }},
		{Resource: "kopfexamples", Reason: causes.Resume, Fn: fn, Configure: func(h *Handler) { h.ID = "resume_fn" }},
	} {
		reg.AddChanging(r)
	}
	if err := reg.Err(); err != nil {
		b.Fatal(err)
	}
	return reg.Changing()
}

func BenchmarkSelect(b *testing.B) {
	hs := benchRegistry(b)
	old := map[string]any{"spec": map[string]any{"field": "a", "items": []any{"x"}}, "metadata": map[string]any{"labels": map[string]any{"app": "a"}}}
	new := map[string]any{"spec": map[string]any{"field": "b", "items": []any{"x"}}, "metadata": map[string]any{"labels": map[string]any{"app": "a"}}}
	diff := diffbase.Compute(old, new)
	b.Run("create", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if got := Select(hs, &Cause{Reason: causes.Create, New: new}); len(got) != 1 {
				b.Fatal(got)
			}
		}
	})
	b.Run("update-with-fields", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if got := Select(hs, &Cause{Reason: causes.Update, Old: old, New: new, Diff: diff}); len(got) != 2 {
				b.Fatal(got)
			}
		}
	})
}

// BenchmarkCyclePass is the common case: one create handler that succeeds
// at once with a small result, its record stored and purged in one pass;
// tracing off (the default), and on with every span sampled and recorded
// and handed to an exporter that drops them (the export's own cost is in
// e2e/bench's kopfgo-tracing contender).
func BenchmarkCyclePass(b *testing.B) {
	b.Run("tracing=off", func(b *testing.B) { benchmarkCyclePass(b, nil) })
	b.Run("tracing=on", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
		defer func() { _ = tp.Shutdown(context.Background()) }()
		benchmarkCyclePass(b, tracing.New(tp))
	})
}

func benchmarkCyclePass(b *testing.B, tracer *tracing.Tracer) {
	fn := func(context.Context, *handlers.Change) (any, error) {
		return map[string]any{"message": "hello world"}, nil
	}
	h := &Handler{ID: "create_fn", Reason: causes.Create, Fn: fn}
	body := map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{"name": "kex", "namespace": "default", "uid": "u1"},
		"spec":     map[string]any{"field": "value", "items": []any{"item1", "item2"}},
	}
	essence := diffbase.Default().Build(body, nil)
	diff := diffbase.Compute(nil, essence)
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	storage := persistence.Default()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	b.ReportAllocs()
	for b.Loop() {
		c := Cycle{
			Reason: causes.Create, Handlers: []*Handler{h}, Known: []*Handler{h},
			Body: body, New: essence, Diff: diff, Patch: &patch.Patch{}, Storage: storage,
			Clock: clock, Logger: logger, Memo: &handlers.Memo{}, DefaultBackoff: time.Minute,
			Tracer: tracer,
		}
		if out := c.Run(context.Background()); !out.Done {
			b.Fatal(out)
		}
	}
}
