package reactor

import (
	"context"
	"strings"
	"testing"

	"github.com/kopfgo/kopfgo/causes"
	"github.com/kopfgo/kopfgo/handlers"
	"github.com/kopfgo/kopfgo/internal/pausing"
)

func TestPauseStopsWatchingAndResumeHandlesWhatCameMeanwhile(t *testing.T) {
	s := newScenario(t)
	s.pause = &pausing.Switch{}
	var calls counter
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		calls.inc(c.Name)
		return nil, nil
	})
	s.create("kex1", map[string]any{"field": "value"})
	s.start()
	s.until("kex1 handled", func() bool {
		_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
		return ok
	})

	s.pause.Pause("peering")
	s.until("the watch paused and stopped", func() bool {
		log := s.log.String()
		return strings.Contains(log, "Pausing the watch-stream for kopfexamples.v1.kopf.dev in 'default' (blockers: peering).") &&
			strings.Contains(log, "Stopping the watch-stream for kopfexamples.v1.kopf.dev in 'default'.")
	})
	// Nothing watches now: an object created meanwhile waits for the resume.
	s.create("kex2", map[string]any{"field": "value"})
	if _, ok := annotation(s.get("kex2"), "kopf.zalando.org/last-handled-configuration"); ok || calls.get("kex2") != 0 {
		t.Fatal("an object was handled while the operator was paused")
	}
	if strings.Contains(s.log.String(), "the resource is gone") {
		t.Error("a pause was reported as the resource being gone")
	}

	s.pause.Resume("peering")
	s.until("kex2 handled after the resume", func() bool {
		_, ok := annotation(s.get("kex2"), "kopf.zalando.org/last-handled-configuration")
		return ok
	})
	if !strings.Contains(s.log.String(), "Resuming the watch-stream for kopfexamples.v1.kopf.dev in 'default'.") {
		t.Error("the resume is not logged")
	}
	s.stop()
	if n1, n2 := calls.get("kex1"), calls.get("kex2"); n1 != 1 || n2 != 1 {
		t.Errorf("create handler calls: kex1 %d, kex2 %d; want 1 each", n1, n2)
	}
}

func TestPausedFromTheStartWatchesNothingUntilResumed(t *testing.T) {
	s := newScenario(t)
	s.pause = &pausing.Switch{}
	s.pause.Pause("leader election")
	var calls counter
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		calls.inc(c.Name)
		return nil, nil
	})
	s.create("kex1", map[string]any{"field": "value"})
	s.start()
	s.until("paused at the start", func() bool {
		return strings.Contains(s.log.String(), "Pausing the watch-stream for kopfexamples.v1.kopf.dev in 'default' (blockers: leader election).")
	})
	s.pause.Resume("leader election")
	s.until("kex1 handled after the resume", func() bool {
		_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
		return ok
	})
	s.stop()
	if strings.Count(s.log.String(), "Starting the watch-stream for kopfexamples") != 1 {
		t.Errorf("want exactly one watch started (after the resume); log:\n%s", s.log)
	}
	if n := calls.get("kex1"); n != 1 {
		t.Errorf("create handler calls: %d, want 1", n)
	}
}
