package kopfgo

import (
	"context"
	"errors"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/kopfgo/kopfgo/internal/tracing"
)

// Tracing is off unless the environment or the options ask for it; a
// no-op provider is off whatever the environment says; a caller's provider
// is used as it is; an exporter kopfgo lacks fails Run before it starts.
func TestTracingIsOffUnlessAskedFor(t *testing.T) {
	for _, v := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Setenv(v, "")
	}
	sdk := sdktrace.NewTracerProvider()
	defer func() { _ = sdk.Shutdown(context.Background()) }()
	for _, tc := range []struct {
		name string
		env  map[string]string
		tp   Options
		on   bool
		err  error
	}{
		{name: "nothing asked"},
		{name: "a no-op provider", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, tp: Options{TracerProvider: noop.NewTracerProvider()}},
		{name: "the caller's provider", tp: Options{TracerProvider: sdk}, on: true},
		{name: "an OTLP endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, on: true},
		{name: "the SDK disabled", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}},
		{name: "an exporter kopfgo lacks", env: map[string]string{"OTEL_TRACES_EXPORTER": "jaeger"}, err: tracing.ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			r, err := New(tc.tp).newRun()
			if err != nil {
				t.Fatal(err)
			}
			stop, err := r.tracing(context.Background())
			if !errors.Is(err, tc.err) {
				t.Fatalf("tracing: %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			defer stop()
			if (r.tracer != nil) != tc.on {
				t.Errorf("tracer = %v, want on: %v", r.tracer, tc.on)
			}
		})
	}
}
