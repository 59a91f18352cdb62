package kopfgo

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"
)

// A startup handler's Process.UltimateExitingTimeout is the one the signal
// handling of Main uses (compat: settings-process): the login handler, which
// runs after the startup handlers, sees it in force, and Options' value
// before and after the run.
func TestUltimateExitingTimeoutFromAStartupHandler(t *testing.T) {
	op := New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	op.opts.Settings.Process.UltimateExitingTimeout = time.Hour
	op.On.Startup(func(ctx context.Context, a *Activity) error {
		a.Settings.Process.UltimateExitingTimeout = 7 * time.Second
		return nil
	}, ID("startup"))
	var during time.Duration
	op.On.Login(func(ctx context.Context, a *Activity) (*ConnectionInfo, error) {
		during = op.ultimateExitingTimeout()
		return nil, Permanent(errors.New("no cluster in this test"))
	}, ID("login"))
	if got := op.ultimateExitingTimeout(); got != time.Hour {
		t.Errorf("before Run: %v, want Options' 1h", got)
	}
	if err := op.Run(t.Context()); err == nil {
		t.Fatal("Run succeeded without credentials")
	}
	if during != 7*time.Second {
		t.Errorf("after the startup handlers: %v, want the handler's 7s", during)
	}
	if got := op.ultimateExitingTimeout(); got != time.Hour {
		t.Errorf("after Run: %v, want Options' 1h", got)
	}
}
