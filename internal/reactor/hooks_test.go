package reactor

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/handlers"
)

// callHooks records the watch events' types and the handler calls.
type callHooks struct {
	nopHooks
	mu    sync.Mutex
	types []string
	calls []HandlerCall
	poke  func()
}

func (h *callHooks) WatchEvent(_ string, typ string) {
	h.mu.Lock()
	h.types = append(h.types, typ)
	h.mu.Unlock()
	h.poke()
}

func (h *callHooks) Handler(c HandlerCall, _ time.Duration) {
	h.mu.Lock()
	h.calls = append(h.calls, c)
	h.mu.Unlock()
	h.poke()
}

func (h *callHooks) snapshot() ([]string, []HandlerCall) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.types), slices.Clone(h.calls)
}

// The hooks are told of the initial listing's objects as LISTED, and of
// each handler's call with its resource and its object's namespace, for
// every kind of handler: the metrics label them so.
func TestHooksGetListedEventsAndWhereHandlersRan(t *testing.T) {
	s := newScenario(t)
	hooks := &callHooks{poke: s.poke}
	s.hooks = hooks
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil })
	s.onEvent("event_fn", func(ctx context.Context, e *handlers.WatchEvent) (any, error) { return nil, nil }, nil)
	s.daemon("daemon_fn", func(ctx context.Context, sp *handlers.Spawn) (any, error) { return nil, nil })
	s.create("kex1", map[string]any{"field": "value"})
	s.start()
	want := map[string]causes.Reason{"create_fn": causes.Create, "event_fn": eventCause, "daemon_fn": "daemon"}
	s.until("each handler's call", func() bool {
		_, calls := hooks.snapshot()
		seen := map[string]bool{}
		for _, c := range calls {
			seen[c.ID] = true
		}
		return len(seen) == len(want)
	})
	types, calls := hooks.snapshot()
	if len(types) == 0 || types[0] != "LISTED" {
		t.Errorf("watch event types %q, want LISTED first (the object existed before the start)", types)
	}
	for _, c := range calls {
		if c.Resource != "kopfexamples.v1.kopf.dev" || c.Namespace != "default" || c.Reason != want[c.ID] {
			t.Errorf("handler call %+v, want resource kopfexamples.v1.kopf.dev, namespace default, reason %q", c, want[c.ID])
		}
	}
}
