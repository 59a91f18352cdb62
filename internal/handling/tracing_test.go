package handling

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/tracing"
)

func attrs(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// Each handler call is a span with its id, cause, attempt and outcome, and
// the handler's ctx carries it, so that the handler's own spans and
// requests nest in it.
func TestHandlerCallsAreSpansWithTheirOutcomes(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	w := newWorld(t)
	w.tracer = tracing.New(tp)
	var seen []trace.SpanContext
	h := &Handler{ID: "create_fn", Reason: "create", Fn: func(ctx context.Context, c *handlers.Change) (any, error) {
		seen = append(seen, trace.SpanContextFromContext(ctx))
		switch c.Retry {
		case 0:
			return nil, &handlers.TemporaryError{Err: errors.New("not yet"), Delay: time.Second}
		case 1:
			return nil, errors.New("boom")
		}
		return nil, &handlers.PermanentError{Err: errors.New("give up")}
	}}
	for range 3 {
		w.pass(h)
		w.clock.Step(time.Minute)
	}
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans ended, want one per call (3)", len(spans))
	}
	want := []struct {
		outcome string
		status  codes.Code
	}{{"temporary", codes.Unset}, {"exception", codes.Error}, {"permanent", codes.Error}}
	for i, s := range spans {
		a := attrs(s.Attributes())
		if s.Name() != "kopfgo.handler create_fn" || a[tracing.AttrHandler].AsString() != "create_fn" ||
			a[tracing.AttrCause].AsString() != "create" || a[tracing.AttrRetry].AsInt64() != int64(i) ||
			a[tracing.AttrOutcome].AsString() != want[i].outcome || s.Status().Code != want[i].status {
			t.Errorf("span %d: %s %v status %v, want retry %d, outcome %s, status %v", i, s.Name(), s.Attributes(), s.Status(), i, want[i].outcome, want[i].status)
		}
		if i < len(seen) && !seen[i].Equal(s.SpanContext()) {
			t.Errorf("call %d: the handler's ctx has span %v, want its call's %v", i, seen[i], s.SpanContext())
		}
	}
}

// With tracing off, the handler's ctx carries no span.
func TestHandlerCallsAreNoSpansWhenTracingIsOff(t *testing.T) {
	w := newWorld(t)
	var sc trace.SpanContext
	h := &Handler{ID: "create_fn", Reason: "create", Fn: func(ctx context.Context, c *handlers.Change) (any, error) {
		sc = trace.SpanContextFromContext(ctx)
		return nil, nil
	}}
	if out, _ := w.pass(h); !out.Done {
		t.Fatalf("outcome = %+v, want done", out)
	}
	if sc.IsValid() {
		t.Errorf("the handler's ctx has a span %v with tracing off", sc)
	}
}

func TestOutcomeOf(t *testing.T) {
	for err, want := range map[error]string{
		nil:                                     "success",
		&handlers.TemporaryError{Delay: 1}:      "temporary",
		&handlers.PermanentError{}:              "permanent",
		errors.New("x"):                         "exception",
		errors.Join(&handlers.PermanentError{}): "permanent",
	} {
		if got := OutcomeOf(err); got != want {
			t.Errorf("OutcomeOf(%v) = %s, want %s", err, got, want)
		}
	}
}
