package handling

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/internal/handlers"
	testingclock "k8s.io/utils/clock/testing"
)

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startupFn(ctx context.Context, a *handlers.Activity) error { return nil }

func brokenFn(ctx context.Context, a *handlers.Activity) error { return nil }

// TestActivityLinesAsKopf: activity handlers are "Activity 'id'" in the
// log, as in Kopf, and their cycle says nothing of being "processed".
func TestActivityLinesAsKopf(t *testing.T) {
	var r Registry
	r.AddActivity(handlers.Startup, startupFn, func(ctx context.Context, a *handlers.Activity) (any, error) { return nil, nil }, func(h *Handler) { h.ID = "startup_fn" })
	r.AddActivity(handlers.Startup, brokenFn, func(ctx context.Context, a *handlers.Activity) (any, error) {
		return nil, &handlers.PermanentError{Err: errors.New("boom")}
	}, func(h *Handler) { h.ID = "broken_fn" })
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	var buf syncBuffer
	env := ActivityEnv{
		Clock:  testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if _, err := RunActivity(context.Background(), handlers.Startup, r.Activities(handlers.Startup), env); err == nil {
		t.Fatal("the permanent failure is not reported")
	}
	log := buf.String()
	for _, line := range []string{
		`msg="Activity 'startup_fn' is invoked."`,
		`msg="Activity 'startup_fn' succeeded."`,
		`msg="Activity 'broken_fn' failed permanently: boom"`,
	} {
		if !strings.Contains(log, line) {
			t.Errorf("no %s in:\n%s", line, log)
		}
	}
	if strings.Contains(log, "is processed") || strings.Contains(log, "Handler '") {
		t.Errorf("a line Kopf does not write for activities:\n%s", log)
	}
}
