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

// A pass is a span naming the object, linked to the trace of the object's
// traceparent annotation; the handler's call is its child, and the
// handler's ctx carries that call's span.
func TestPassesAndHandlerCallsAreSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	s := newScenario(t)
	s.tracer = tracing.New(tp)
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
	s.until("handled", func() bool { return calls.get("kex1") == 1 && handlerSpan(rec) != nil })
	s.stop()

	h := handlerSpan(rec)
	a := spanAttrs(h)
	if a[tracing.AttrHandler] != "create_fn" || a[tracing.AttrCause] != "create" || a[tracing.AttrRetry] != "0" || a[tracing.AttrOutcome] != "success" {
		t.Errorf("handler span attributes = %v", a)
	}
	if !inHandler.Equal(h.SpanContext()) {
		t.Errorf("the handler's ctx has span %v, want its call's %v", inHandler, h.SpanContext())
	}
	var pass sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() == tracing.PassSpan && sp.SpanContext().SpanID() == h.Parent().SpanID() {
			pass = sp
		}
	}
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

// handlerSpan is the first handler span ended, or nil.
func handlerSpan(rec *tracetest.SpanRecorder) sdktrace.ReadOnlySpan {
	for _, sp := range rec.Ended() {
		if sp.Name() == tracing.HandlerSpan+" create_fn" {
			return sp
		}
	}
	return nil
}
