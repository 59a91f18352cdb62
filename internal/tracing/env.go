package tracing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ErrUnsupported is the error of an OTEL_* setting that kopfgo cannot
// honour (an exporter or protocol other than OTLP over HTTP).
var ErrUnsupported = errors.New("unsupported tracing setting")

// Enabled tells whether the environment asks for traces, by the variables
// of OpenTelemetry's SDK configuration: OTEL_SDK_DISABLED=true turns
// tracing off; otherwise OTEL_TRACES_EXPORTER (other than "none") or an
// OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) turns it on. Unlike the spec's
// default exporter ("otlp" when nothing is set), nothing set means off: an
// operator that sends spans to localhost:4318 unasked would fill its log
// with export errors.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	if exp == "none" {
		return false
	}
	return exp != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// FromEnv makes the tracer provider the environment asks for (Enabled), or
// returns nil when tracing is off. The provider exports over OTLP/HTTP in
// batches; the exporter reads its OTEL_EXPORTER_OTLP_* variables, the SDK
// OTEL_TRACES_SAMPLER(_ARG), OTEL_BSP_* and OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES itself. The provider runs a goroutine of its
// own: the caller shuts it down (Shutdown), which flushes the spans left.
func FromEnv(ctx context.Context, getenv func(string) string) (*sdktrace.TracerProvider, error) {
	if !Enabled(getenv) {
		return nil, nil
	}
	for _, exp := range strings.Split(getenv("OTEL_TRACES_EXPORTER"), ",") {
		if exp = strings.TrimSpace(exp); exp != "" && exp != "otlp" {
			return nil, fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%s: kopfgo exports traces over OTLP only; set it to otlp or none", ErrUnsupported, exp)
		}
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return nil, fmt.Errorf("%w: OTEL_EXPORTER_OTLP_PROTOCOL=%s: kopfgo exports traces over OTLP/HTTP only; set it to http/protobuf (port 4318 of a collector)", ErrUnsupported, proto)
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot create the OTLP trace exporter; check the OTEL_EXPORTER_OTLP_* variables: %w", err)
	}
	// The SDK's default resource names the service from the environment.
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter)), nil
}

// Shutdown flushes and stops a provider that FromEnv made, waiting at most
// timeout for the last export.
func Shutdown(tp trace.TracerProvider, timeout time.Duration) error {
	sdk, ok := tp.(*sdktrace.TracerProvider)
	if !ok || sdk == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("cannot flush the last spans: %w", err)
	}
	return nil
}
