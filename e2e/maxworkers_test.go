//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/kopfgo/kopfgo"
)

// TestMaxWorkersBoundsThePassesEndToEnd: with Execution.MaxWorkers set, no
// more handlers than that run at once however many objects wait, each
// object is handled once, and the objects waiting are handled in turn.
func TestMaxWorkersBoundsThePassesEndToEnd(t *testing.T) {
	const objects, limit = 40, 3
	ns := namespace(t)
	for i := range objects {
		createKex(t, ns, kexObj(fmt.Sprintf("kex-%02d", i), nil, nil, map[string]any{"field": "x"}))
	}
	var (
		mu      sync.Mutex
		running int
		most    int
		seen    = map[string]int{}
		gate    = make(chan struct{})
		opened  sync.Once
	)
	t.Cleanup(func() { opened.Do(func() { close(gate) }) })
	opts := kopfgo.Options{Namespaces: []string{ns}, Standalone: true}
	opts.Settings.Execution.MaxWorkers = limit
	log := embeddedWith(t, opts, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", func(ctx context.Context, c *kopfgo.Change) (any, error) {
			mu.Lock()
			running++
			most = max(most, running)
			seen[c.Name]++
			full := running == limit
			mu.Unlock()
			if full {
				// The limit is reached: from now on every handler goes on;
				// had it been passed, most would say so.
				opened.Do(func() { close(gate) })
			}
			select {
			case <-gate:
			case <-ctx.Done():
			}
			mu.Lock()
			running--
			mu.Unlock()
			return map[string]any{"done": true}, nil
		}, kopfgo.ID("create_fn"))
	})
	log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", objects)
	for i := range objects {
		name := fmt.Sprintf("kex-%02d", i)
		waitKex(t, ns, name, "handled", handled)
	}
	mu.Lock()
	defer mu.Unlock()
	if most != limit {
		t.Errorf("at most %d handlers ran at once, want %d (MaxWorkers)", most, limit)
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("%s: handler called %d times, want 1", name, n)
		}
	}
	if len(seen) != objects {
		t.Errorf("%d objects handled, want %d", len(seen), objects)
	}
}
