package tracing

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of kopfgo's spans.
const ScopeName = "github.com/kopfgo/kopfgo"

// The annotations that carry a client's trace context onto an object, in
// the W3C Trace Context format (the same names as the HTTP headers).
const (
	TraceparentAnnotation = "traceparent"
	TracestateAnnotation  = "tracestate"
)

// The span names.
const (
	PassSpan    = "kopfgo.pass"
	HandlerSpan = "kopfgo.handler"
)

// The attributes of kopfgo's spans. The object's are Kubernetes' semantic
// conventions where they exist (k8s.namespace.name); the rest are kopfgo's.
const (
	AttrResource  = attribute.Key("kopfgo.resource")
	AttrNamespace = attribute.Key("k8s.namespace.name")
	AttrName      = attribute.Key("kopfgo.object.name")
	AttrUID       = attribute.Key("kopfgo.object.uid")
	AttrStep      = attribute.Key("kopfgo.pass.step")
	AttrHandler   = attribute.Key("kopfgo.handler.id")
	AttrCause     = attribute.Key("kopfgo.handler.cause")
	AttrRetry     = attribute.Key("kopfgo.handler.retry")
	AttrOutcome   = attribute.Key("kopfgo.handler.outcome")
)

// Tracer starts kopfgo's spans. A nil *Tracer is tracing turned off: its
// methods are never called on a hot path (callers check for nil first),
// and Transport leaves the transport alone.
type Tracer struct {
	provider trace.TracerProvider
	tracer   trace.Tracer
	prop     propagation.TraceContext
}

// New is a Tracer of the provider's spans; nil for a nil provider.
func New(tp trace.TracerProvider) *Tracer {
	if tp == nil {
		return nil
	}
	return &Tracer{provider: tp, tracer: tp.Tracer(ScopeName)}
}

// Object is what a pass span says of its object.
type Object struct {
	Resource    string
	Namespace   string
	Name        string
	UID         string
	Annotations map[string]string
}

// Pass prepares the span of a pass over an object: the span starts only
// once the pass acts (Act), with the pass's start as its start, and the
// returned function ends it if it has started. Most passes over a settled
// object (those of a restart, of a resync) find nothing to do, and a span
// each would be most of what tracing costs then.
//
// When the object carries a traceparent annotation, the span is linked to
// that span context, not a child of it: the annotation stays on the object
// and every later pass (retries, the operator's own status updates,
// changes by others) would otherwise join the client's trace, long after
// the client's operation ended; OpenTelemetry's guidance for work a
// message triggers asynchronously is a link to the message's creation
// context.
func (t *Tracer) Pass(ctx context.Context, o Object) (context.Context, func()) {
	p := &pass{tracer: t.tracer, opts: []trace.SpanStartOption{
		trace.WithTimestamp(time.Now()),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			AttrResource.String(o.Resource), AttrNamespace.String(o.Namespace),
			AttrName.String(o.Name), AttrUID.String(o.UID),
		),
	}}
	if sc := t.Remote(o.Annotations); sc.IsValid() {
		p.opts = append(p.opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	return context.WithValue(ctx, passKey{}, p), p.end
}

// pass is the span of a pass, nil until the pass acts. Only the pass's
// own goroutine starts and ends it.
type pass struct {
	tracer trace.Tracer
	opts   []trace.SpanStartOption
	span   trace.Span
}

type passKey struct{}

func (p *pass) end() {
	if p.span != nil {
		p.span.End()
	}
}

// Act starts the span of ctx's pass unless it has started, and returns
// ctx with it, for what the pass does next: a handler call or an API
// request is the span's child. A ctx without a pass is returned as it is.
func Act(ctx context.Context) context.Context {
	p, _ := ctx.Value(passKey{}).(*pass)
	if p == nil {
		return ctx
	}
	if p.span == nil {
		_, p.span = p.tracer.Start(ctx, PassSpan, p.opts...)
	}
	return trace.ContextWithSpan(ctx, p.span)
}

// Remote is the span context of an object's traceparent (and tracestate)
// annotations; invalid when there is none or it does not parse.
func (t *Tracer) Remote(annotations map[string]string) trace.SpanContext {
	if annotations[TraceparentAnnotation] == "" {
		return trace.SpanContext{}
	}
	carrier := propagation.MapCarrier{
		TraceparentAnnotation: annotations[TraceparentAnnotation],
		TracestateAnnotation:  annotations[TracestateAnnotation],
	}
	return trace.SpanContextFromContext(t.prop.Extract(context.Background(), carrier))
}

// Within is ctx with the pass of from and its span, for work of the pass
// in a context that does not derive from the pass's own (handlers run in
// a context of their own).
func Within(ctx, from context.Context) context.Context {
	span := trace.SpanFromContext(from)
	if p, _ := from.Value(passKey{}).(*pass); p != nil {
		ctx = context.WithValue(ctx, passKey{}, p)
		if p.span != nil {
			span = p.span
		}
	}
	return trace.ContextWithSpan(ctx, span)
}

// Step names what the pass did (the plan's step) on the pass's span, if
// it has started.
func Step(ctx context.Context, step fmt.Stringer) {
	if p, _ := ctx.Value(passKey{}).(*pass); p != nil && p.span != nil {
		p.span.SetAttributes(AttrStep.String(step.String()))
	}
}

// Handler starts the span of one handler call, a child of the pass's span
// (which the call starts, if it is the pass's first act); End ends it.
func (t *Tracer) Handler(ctx context.Context, id, cause string, retry int) (context.Context, trace.Span) {
	return t.tracer.Start(Act(ctx), HandlerSpan+" "+id,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(AttrHandler.String(id), AttrCause.String(cause), AttrRetry.Int(retry)),
	)
}

// End ends a handler's span with its outcome (success, temporary,
// permanent, exception, as the metrics name them); an error marks the span
// as failed unless the handler asked to be retried.
func End(span trace.Span, outcome string, err error) {
	span.SetAttributes(AttrOutcome.String(outcome))
	if err != nil {
		span.RecordError(err)
		if outcome != "temporary" {
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}

// Transport wraps an API client's transport so that each request made in
// a traced context (a pass, a handler) is a child span, with the trace
// context sent along in the traceparent header. Requests outside of any
// span (watches, leases, peering) make no span: they would each start a
// trace of one span. A nil Tracer returns rt as it is.
func (t *Tracer) Transport(rt http.RoundTripper) http.RoundTripper {
	if t == nil {
		return rt
	}
	return otelhttp.NewTransport(rt,
		otelhttp.WithTracerProvider(t.provider),
		otelhttp.WithPropagators(t.prop),
		otelhttp.WithFilter(func(r *http.Request) bool {
			return trace.SpanContextFromContext(r.Context()).IsValid()
		}),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			return r.Method + " " + apiPath(r.URL.Path)
		}),
	)
}

// apiPath is a request's path without the object's name, so that spans of
// requests to different objects of a kind share a name: the name is in the
// span's URL attribute.
func apiPath(p string) string {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	// /api/v1/namespaces/NS/PLURAL/NAME[/SUB], /apis/G/V/namespaces/NS/PLURAL/NAME[/SUB]
	base := 2
	if len(parts) > 0 && parts[0] == "apis" {
		base = 3
	}
	if len(parts) > base+1 && parts[base] == "namespaces" {
		parts[base+1] = "{namespace}"
		base += 2
	}
	if len(parts) > base+1 {
		parts[base+1] = "{name}"
	}
	return "/" + strings.Join(parts, "/")
}
