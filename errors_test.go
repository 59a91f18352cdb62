package kopfgo_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo"
)

// A startup handler that uses up its Retries or its Timeout stops the
// operator with an error that errors.As finds as the exported
// RetriesExceededError or HandlerTimeoutError, with the handler's own last
// error inside (Kopf's HandlerRetriesError and HandlerTimeoutError). Startup
// handlers run before anything touches a cluster, so none is needed.
func TestRetriesAndTimeoutEndWithTheirErrors(t *testing.T) {
	boom := errors.New("boom")
	run := func(t *testing.T, opts ...kopfgo.HandlerOption) error {
		t.Helper()
		op := kopfgo.New(kopfgo.Options{Logger: slog.New(slog.DiscardHandler)})
		op.On.Startup(func(ctx context.Context, a *kopfgo.Activity) error {
			return kopfgo.Temporary(boom, 2*time.Second)
		}, append(opts, kopfgo.ID("start"))...)
		err := op.Run(context.Background())
		if err == nil {
			t.Fatal("Run = nil, want the startup handler's failure")
		}
		if !errors.Is(err, boom) {
			t.Errorf("Run = %v, want it to wrap the handler's error", err)
		}
		return err
	}
	t.Run("retries", func(t *testing.T) {
		err := run(t, kopfgo.Retries(1))
		var re *kopfgo.RetriesExceededError
		if !errors.As(err, &re) || re.ID != "start" || re.Retries != 1 {
			t.Errorf("Run = %v, want a RetriesExceededError of handler start after 1", err)
		}
		if !errors.Is(err, &kopfgo.PermanentError{}) {
			t.Errorf("Run = %v, want a permanent error", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		err := run(t, kopfgo.Timeout(time.Second))
		var te *kopfgo.HandlerTimeoutError
		if !errors.As(err, &te) || te.ID != "start" || te.Timeout != time.Second {
			t.Errorf("Run = %v, want a HandlerTimeoutError of handler start after 1s", err)
		}
		var re *kopfgo.RetriesExceededError
		if errors.As(err, &re) {
			t.Errorf("Run = %v, not a RetriesExceededError", err)
		}
	})
}
