package reactor

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/handlers"
)

// When the watch lags behind the operator's own patches for longer than the
// consistency timeout (an overloaded API server), the cached object still
// lacks the diff-base the operator wrote. Acting on it would run the
// creation handler a second time; the operator re-reads the object instead.
// withholdHandled makes the watch never deliver the versions that carry
// the diff-base: the watch lags behind the operator's own patches.
func (s *scenario) withholdHandled() {
	s.watchFilter = func(ev watch.Event) (watch.Event, bool) {
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			return ev, true
		}
		_, withheld := annotation(u, "kopf.zalando.org/last-handled-configuration")
		return ev, !withheld
	}
}

func TestLaggingWatchDoesNotRunHandlersTwice(t *testing.T) {
	s := newScenario(t)
	s.statusSubresource = true // the status patch comes first, and through
	// The clock is stepped until the re-read: a watch restarted for
	// inactivity meanwhile would relist the handled state and hide the lag.
	s.settings.Watching.InactivityTimeout = 24 * time.Hour
	s.withholdHandled()
	var calls counter
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		calls.inc(c.Name)
		return map[string]any{"message": "hello"}, nil
	})
	s.create("kex1", map[string]any{"field": "value"})
	s.start()
	s.until("handled in the API", func() bool {
		_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
		return ok
	})
	// Step past the consistency timeout; again if the worker was mid-pass
	// and set its timer only after the step.
	for !strings.Contains(s.log.String(), "re-reading the object") {
		waits := s.waits.Load()
		s.clock.Step(s.settings.WithDefaults().Persistence.ConsistencyTimeout + time.Second)
		s.until("the object re-read, or its worker waiting again", func() bool {
			return strings.Contains(s.log.String(), "re-reading the object") || s.waits.Load() > waits
		})
	}
	s.until("the re-read object found handled", func() bool {
		return strings.Contains(s.log.String(), "we are not interested")
	})
	if n := calls.get("kex1"); n != 1 {
		t.Errorf("handler called %d times, want 1\nlog:\n%s", n, s.log)
	}
}
