package kopfgo

import (
	"context"
	"os"
	"time"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/kopfgo/kopfgo/internal/tracing"
)

// tracingShutdownTimeout bounds the last export of the spans when Run
// returns: a collector that does not answer must not hold the exit.
const tracingShutdownTimeout = 5 * time.Second

// tracing sets the run's tracer up (Options.TracerProvider, else the
// OTEL_* environment) and returns what stops it when Run returns: the
// provider Run made is flushed and shut down, a caller's is left alone.
func (r *run) tracing(ctx context.Context) (stop func(), err error) {
	tp := r.op.opts.TracerProvider
	owned := false
	if tp == nil {
		sdk, err := tracing.FromEnv(ctx, os.Getenv)
		if err != nil {
			return nil, err
		}
		if sdk != nil {
			tp, owned = sdk, true
		}
	}
	if _, off := tp.(noop.TracerProvider); tp == nil || off {
		return func() {}, nil
	}
	r.tracer = tracing.New(tp)
	if !owned {
		return func() {}, nil
	}
	r.logger.Debug("Tracing is on: spans go to the OTLP endpoint of the OTEL_* environment.")
	return func() {
		if err := tracing.Shutdown(tp, tracingShutdownTimeout); err != nil {
			r.logger.Warn(err.Error())
		}
	}, nil
}
