package reactor

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/plan"
	"github.com/kopfgo/kopfgo/internal/tracing"
)

// The client's trace, as a kubectl plugin or a CI job would put it on the
// object.
const clientTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

// tracedScenario is a scenario whose spans the recorder gets.
func tracedScenario(t *testing.T) (*scenario, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := newScenario(t)
	s.tracer = tracing.New(tp)
	return s, rec
}

// A pass is a span naming the object, linked to the trace of the object's
// traceparent annotation; the handler's call is its child, and the
// handler's ctx carries that call's span.
func TestPassesAndHandlerCallsAreSpans(t *testing.T) {
	s, rec := tracedScenario(t)
	var inHandler trace.SpanContext
	var calls counter
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		inHandler = trace.SpanContextFromContext(ctx)
		calls.inc(c.Name)
		return nil, nil
	})
	s.create("kex1", map[string]any{"field": "value"})
	s.update("kex1", func(u *unstructured.Unstructured) {
		u.SetAnnotations(map[string]string{tracing.TraceparentAnnotation: clientTraceparent, tracing.TracestateAnnotation: "vendor=x"})
	})
	s.start()
	s.until("handled", func() bool { return calls.get("kex1") == 1 && spanNamed(rec, tracing.HandlerSpan+" create_fn") != nil })
	s.stop()

	h := spanNamed(rec, tracing.HandlerSpan+" create_fn")
	a := spanAttrs(h)
	if a[tracing.AttrHandler] != "create_fn" || a[tracing.AttrCause] != "create" || a[tracing.AttrRetry] != "0" || a[tracing.AttrOutcome] != "success" {
		t.Errorf("handler span attributes = %v", a)
	}
	if !inHandler.Equal(h.SpanContext()) {
		t.Errorf("the handler's ctx has span %v, want its call's %v", inHandler, h.SpanContext())
	}
	pass := passSpanOf(rec, h)
	if pass == nil {
		for _, sp := range rec.Ended() {
			t.Logf("%s %v parent %v", sp.Name(), sp.SpanContext().SpanID(), sp.Parent().SpanID())
		}
		t.Fatalf("the handler's span has no pass span as its parent")
	}
	pa := spanAttrs(pass)
	if pa[tracing.AttrResource] != "kopfexamples.v1.kopf.dev" || pa[tracing.AttrNamespace] != "default" || pa[tracing.AttrName] != "kex1" ||
		pa[tracing.AttrUID] != "uid-kex1" || pa[tracing.AttrStep] == "" {
		t.Errorf("pass span attributes = %v", pa)
	}
	if pass.Parent().IsValid() {
		t.Errorf("the pass span has a parent %v; the client's trace is a link, not a parent", pass.Parent())
	}
	links := pass.Links()
	if len(links) != 1 || links[0].SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" ||
		links[0].SpanContext.SpanID().String() != "b7ad6b7169203331" || links[0].SpanContext.TraceState().Get("vendor") != "x" {
		t.Errorf("pass span links = %+v, want the client's span from the traceparent annotation", links)
	}
}

// A pass with nothing to do makes no span: the listing's pass over an
// object already handled (a restart's) calls no handler and writes
// nothing; the next pass, which calls a handler, is the first span, the
// handler's span its child.
func TestPassesWithNothingToDoMakeNoSpan(t *testing.T) {
	s, rec := tracedScenario(t)
	updates, _ := s.handledWithUpdates("a")
	s.start()
	s.until("the listing's pass", func() bool { return s.log.Count(cycleFinished) == 1 })
	s.update("kex1", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "b", "spec", "field")
	})
	var h sdktrace.ReadOnlySpan
	s.until("the update handled, its pass ended", func() bool {
		h = spanNamed(rec, tracing.HandlerSpan+" update_fn")
		return updates.get("kex1") == 1 && h != nil && passSpanOf(rec, h) != nil
	})
	s.stop()

	// One object's passes run in turn: the listing's span, if it had one,
	// would have ended before the update's.
	var first sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() == tracing.PassSpan && first == nil {
			first = sp
		}
	}
	if first.SpanContext().SpanID() != h.Parent().SpanID() {
		t.Errorf("the first pass span has step %q, not the update's pass with its handler: the listing's pass, with nothing to do, made a span",
			spanAttrs(first)[tracing.AttrStep])
	}
	if step := spanAttrs(passSpanOf(rec, h))[tracing.AttrStep]; step != plan.Store.String() {
		t.Errorf("the update's pass span has step %q, want %q", step, plan.Store)
	}
}

// spanNamed is the first span ended with the name, or nil.
func spanNamed(rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	for _, sp := range rec.Ended() {
		if sp.Name() == name {
			return sp
		}
	}
	return nil
}

// passSpanOf is the ended pass span that is the span's parent, or nil.
func passSpanOf(rec *tracetest.SpanRecorder, child sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	for _, sp := range rec.Ended() {
		if sp.Name() == tracing.PassSpan && sp.SpanContext().SpanID() == child.Parent().SpanID() {
			return sp
		}
	}
	return nil
}
