//go:build e2e

package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/cluster"
	"github.com/kopfgo/kopfgo/e2e/runner"
	"github.com/kopfgo/kopfgo/internal/logging"
)

// The client's span that the objects of these tests carry in their
// traceparent annotation.
const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
	traceparent   = "00-" + clientTraceID + "-" + clientSpanID + "-01"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes what exporters
// POST to /v1/traces and keeps the spans, with their resources'
// attributes.
type otlpReceiver struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(req.Body)
	var msg coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &msg)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				r.services = append(r.services, kv.Value.GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *otlpReceiver) received() ([]*tracepb.Span, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...), append([]string(nil), r.services...)
}

func otlpAttrs(s *tracepb.Span) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = strconv.FormatInt(v.IntValue, 10)
		}
	}
	return m
}

// TestTracingThroughAnOTLPReceiver runs the minimal example with the
// standard OTEL_* variables pointing at a receiver of the test's own: the
// pass, the handler's call and the API requests of the pass arrive as
// spans with their attributes, and the pass links to the trace of the
// object's traceparent annotation.
func TestTracingThroughAnOTLPReceiver(t *testing.T) {
	ns := namespace(t)
	recv := &otlpReceiver{}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	p := startProcess(t, kopfgoCLI(t), []string{"run", "./examples/01-minimal", "-n", ns, "--standalone", "--verbose", "--log-format=plain"}, runner.Options{
		Dir: repoRoot,
		Env: []string{
			"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL,
			"OTEL_BSP_SCHEDULE_DELAY=100", // milliseconds: export soon, not in 5 s
			"OTEL_SERVICE_NAME=kopfgo-e2e",
		},
	})
	waitLog(t, p, "Client is configured", 1)
	obj := objYAML(t)
	obj["metadata"].(map[string]any)["annotations"] = map[string]any{"traceparent": traceparent}
	u := createKex(t, ns, obj)
	waitKex(t, ns, "kopf-example-1", "the creation to be handled", handled)

	var handler, pass, patch *tracepb.Span
	eventually(t, waitShort, "the spans of the handling to arrive", func() (bool, error) {
		spans, _ := recv.received()
		for _, s := range spans {
			if s.Name == "kopfgo.handler create_fn" {
				handler = s
			}
		}
		for _, s := range spans {
			if handler != nil && s.Name == "kopfgo.pass" && string(s.SpanId) == string(handler.ParentSpanId) {
				pass = s
			}
		}
		for _, s := range spans {
			if pass != nil && strings.HasPrefix(s.Name, "PATCH ") && string(s.ParentSpanId) == string(pass.SpanId) {
				patch = s
			}
		}
		return patch != nil, fmt.Errorf("%d spans so far", len(spans))
	})
	_, services := recv.received()
	if len(services) == 0 || services[0] != "kopfgo-e2e" {
		t.Errorf("service names %v, want kopfgo-e2e from OTEL_SERVICE_NAME", services)
	}
	ha := otlpAttrs(handler)
	if ha["kopfgo.handler.id"] != "create_fn" || ha["kopfgo.handler.cause"] != "create" || ha["kopfgo.handler.outcome"] != "success" || ha["kopfgo.handler.retry"] != "0" {
		t.Errorf("handler span attributes %v", ha)
	}
	pa := otlpAttrs(pass)
	if pa["kopfgo.resource"] != "kopfexamples.v1.kopf.dev" || pa["k8s.namespace.name"] != ns || pa["kopfgo.object.name"] != "kopf-example-1" || pa["kopfgo.object.uid"] != string(u.GetUID()) {
		t.Errorf("pass span attributes %v", pa)
	}
	if len(pass.Links) != 1 || hex.EncodeToString(pass.Links[0].TraceId) != clientTraceID || hex.EncodeToString(pass.Links[0].SpanId) != clientSpanID {
		t.Errorf("pass span links %v, want the traceparent annotation's span", pass.Links)
	}
	if !strings.Contains(patch.Name, "/namespaces/{namespace}/kopfexamples/{name}") {
		t.Errorf("API request span %q", patch.Name)
	}
}

// TestTracingToATracerProviderOfTheCaller: an embedded operator given a
// TracerProvider sends its spans there, an in-memory exporter here, and
// Run leaves the provider to its owner.
func TestTracingToATracerProviderOfTheCaller(t *testing.T) {
	ns := namespace(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	log := &logSink{}
	op := kopfgo.New(kopfgo.Options{
		Namespaces: []string{ns}, Standalone: true, TracerProvider: tp,
		RESTConfig: cluster.Shared(t).RESTConfig(),
		Logger:     logging.New(logging.Config{Format: logging.FormatPlain, Level: slog.LevelDebug, Writer: log}),
	})
	op.On.Create("kopfexamples", func(ctx context.Context, c *kopfgo.Change) (any, error) {
		return map[string]any{"ok": true}, nil
	}, kopfgo.ID("create_fn"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- op.Run(ctx) }()
	createKex(t, ns, objYAML(t))
	waitKex(t, ns, "kopf-example-1", "the creation to be handled", handled)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v\n%s", err, log)
	}
	var handlers, passes, requests int
	for _, s := range exp.GetSpans() {
		switch {
		case s.Name == "kopfgo.handler create_fn":
			handlers++
		case s.Name == "kopfgo.pass":
			passes++
		case strings.HasPrefix(s.Name, "PATCH "):
			requests++
		}
	}
	if handlers != 1 || passes < 1 || requests < 1 {
		t.Errorf("spans: %d handler calls, %d passes, %d PATCH requests; want 1, at least 1, at least 1", handlers, passes, requests)
	}
	// Run did not shut the caller's provider down: it still records.
	_, span := tp.Tracer("test").Start(context.Background(), "after")
	span.End()
	if got := exp.GetSpans(); got[len(got)-1].Name != "after" {
		t.Errorf("the caller's provider stopped recording after Run")
	}
}
