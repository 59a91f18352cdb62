package reactor

import (
	"context"
	"errors"
	"testing"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/handlers"
)

// A changing handler still running when the operator exits has its ctx
// cancelled with the one exported ErrOperatorExiting as the cause, the
// same error daemons see, so that a handler can tell an exit from its own
// deadline with errors.Is.
func TestHandlerCancelledOnExitSeesErrOperatorExiting(t *testing.T) {
	s := newScenario(t)
	s.settings.Queueing.ExitTimeout = -1 // cancel running handlers at once
	started := make(chan struct{})
	cause := make(chan error, 1)
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	s.create("kex1", map[string]any{"field": "value"})
	s.start()
	<-started
	s.stop()
	if got := <-cause; !errors.Is(got, handlers.ErrOperatorExiting) {
		t.Errorf("context.Cause = %v, want ErrOperatorExiting", got)
	}
}
