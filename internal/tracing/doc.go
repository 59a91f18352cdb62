// Package tracing is the operator's OpenTelemetry tracing: the tracer
// provider the standard OTEL_* environment variables ask for (or none), the
// spans of passes and handler calls with their attributes, the W3C
// traceparent annotation an object may carry, and the API client's
// transport that makes requests child spans.
//
// It exists so that the reactor and the handling cycle name spans and
// attributes in one place, and so that tracing that is off costs them a nil
// check: a nil *Tracer starts nothing, and the transport is not wrapped.
package tracing
