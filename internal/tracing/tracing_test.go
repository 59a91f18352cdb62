package tracing

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestEnabledFollowsTheOTELVariables(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"nothing set", nil, false},
		{"an OTLP endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true},
		{"a traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true},
		{"the otlp exporter", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false},
		{"the SDK disabled", map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "otlp"}, false},
		{"the SDK not disabled", map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_TRACES_EXPORTER": "otlp"}, true},
	} {
		if got := Enabled(env(tc.env)); got != tc.want {
			t.Errorf("%s: Enabled = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFromEnvRefusesWhatItCannotExport(t *testing.T) {
	for _, kv := range []map[string]string{
		{"OTEL_TRACES_EXPORTER": "zipkin"},
		{"OTEL_TRACES_EXPORTER": "otlp,console"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
	} {
		tp, err := FromEnv(context.Background(), env(kv))
		if !errors.Is(err, ErrUnsupported) || tp != nil {
			t.Errorf("%v: FromEnv = %v, %v; want ErrUnsupported", kv, tp, err)
		}
	}
	if tp, err := FromEnv(context.Background(), env(nil)); tp != nil || err != nil {
		t.Errorf("nothing set: FromEnv = %v, %v; want no provider", tp, err)
	}
}

func TestAPIPathsShareANamePerKind(t *testing.T) {
	for in, want := range map[string]string{
		"/apis/kopf.dev/v1/namespaces/default/kopfexamples/kex1":        "/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples/{name}",
		"/apis/kopf.dev/v1/namespaces/default/kopfexamples/kex1/status": "/apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples/{name}/status",
		"/api/v1/namespaces/default/pods":                               "/api/v1/namespaces/{namespace}/pods",
		"/api/v1/nodes/n1":                                              "/api/v1/nodes/{name}",
		"/apis/kopf.dev/v1/kopfexamples":                                "/apis/kopf.dev/v1/kopfexamples",
		"/api/v1/namespaces/default":                                    "/api/v1/namespaces/{namespace}",
	} {
		if got := apiPath(in); got != want {
			t.Errorf("apiPath(%s) = %s, want %s", in, got, want)
		}
	}
}

// Requests in a traced context are child spans and carry the traceparent
// header; requests outside any span make none.
func TestTransportTracesRequestsInSpansOnly(t *testing.T) {
	var headers []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers = append(headers, r.Header.Get("traceparent"))
	}))
	defer srv.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tr := New(tp)
	client := &http.Client{Transport: tr.Transport(http.DefaultTransport)}
	get := func(ctx context.Context) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/apis/kopf.dev/v1/namespaces/default/kopfexamples/kex1", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	get(context.Background())
	ctx, end := tr.Pass(context.Background(), Object{Resource: "kopfexamples.v1.kopf.dev", Name: "kex1"})
	get(Act(ctx))
	end()
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want the pass and one request", len(spans))
	}
	req := spans[0]
	if req.Name() != "GET /apis/kopf.dev/v1/namespaces/{namespace}/kopfexamples/{name}" || req.Parent().SpanID() != spans[1].SpanContext().SpanID() {
		t.Errorf("request span %q with parent %v, want the pass's child", req.Name(), req.Parent())
	}
	if len(headers) != 2 || headers[0] != "" || headers[1] == "" {
		t.Errorf("traceparent headers sent = %q, want none outside a span and one inside", headers)
	}
	if New(nil) != nil || (*Tracer)(nil).Transport(http.DefaultTransport) != http.DefaultTransport {
		t.Errorf("a nil provider must give a nil Tracer that leaves the transport alone")
	}
}

// A pass's span starts when the pass first acts, once however often it
// acts, and a pass that never acts makes none.
func TestPassSpanStartsWhenThePassActs(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tr := New(tp)
	o := Object{Resource: "kopfexamples.v1.kopf.dev", Namespace: "default", Name: "kex1", UID: "uid-kex1"}

	ctx, end := tr.Pass(context.Background(), o)
	Step(ctx, stringer("nothing"))
	end()
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("a pass that did not act ended %d spans, want none", n)
	}

	ctx, end = tr.Pass(context.Background(), o)
	first := trace.SpanFromContext(Act(ctx))
	second := trace.SpanFromContext(Act(ctx))
	Step(ctx, stringer("store"))
	end()
	spans := rec.Ended()
	if len(spans) != 1 || spans[0].Name() != PassSpan || !first.SpanContext().Equal(second.SpanContext()) ||
		spans[0].SpanContext().SpanID() != first.SpanContext().SpanID() {
		t.Fatalf("a pass that acted twice ended %d spans, want its one span for both", len(spans))
	}
	var step string
	for _, kv := range spans[0].Attributes() {
		if kv.Key == AttrStep {
			step = kv.Value.Emit()
		}
	}
	if step != "store" {
		t.Errorf("the pass span's step = %q, want the one named after it started", step)
	}
	if Act(context.Background()) != context.Background() {
		t.Errorf("Act outside a pass changed the context")
	}
}

type stringer string

func (s stringer) String() string { return string(s) }
