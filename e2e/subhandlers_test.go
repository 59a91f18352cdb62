//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo"
)

// TestSubhandlerRetriesAloneAndTheParentResultIsDeliveredOnce: a
// sub-handler that fails until its third try does not make its succeeded
// siblings run again, and the parent's result is stored once, when all its
// children are done (compat: handlers-subhandlers).
func TestSubhandlerRetriesAloneAndTheParentResultIsDeliveredOnce(t *testing.T) {
	ns := namespace(t)
	var (
		mu    sync.Mutex
		calls = map[string]int{}
	)
	count := func(id string) int {
		mu.Lock()
		defer mu.Unlock()
		calls[id]++
		return calls[id]
	}
	child := func(id string, failures int) kopfgo.ChangeFunc {
		return func(ctx context.Context, c *kopfgo.Change) (any, error) {
			count(id)
			if c.Retry < failures {
				return nil, kopfgo.TemporaryMsg("not yet", time.Second)
			}
			return map[string]any{"retries": c.Retry}, nil
		}
	}
	var midCycle []string
	var cu caughtUp
	log := embedded(t, ns, func(op *kopfgo.Operator) {
		cu.register(op)
		op.On.Create("kopfexamples", func(ctx context.Context, c *kopfgo.Change) (any, error) {
			n := count("create_fn")
			err := kopfgo.Execute(ctx, map[string]kopfgo.ChangeFunc{
				"a": child("a", 2), // succeeds on its 3rd try
				"b": child("b", 0),
				"c": child("c", 0),
			})
			if err != nil {
				mu.Lock()
				for k := range c.Annotations {
					if strings.HasPrefix(k, "kopf.zalando.org/create_fn") {
						midCycle = append(midCycle, k)
					}
				}
				mu.Unlock()
				return nil, err
			}
			return map[string]any{fmt.Sprintf("call-%d", n): true}, nil
		}, kopfgo.ID("create_fn"))
	})
	obj := createKex(t, ns, objYAML(t))
	log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", 1)
	got := waitKex(t, ns, obj.GetName(), "handled", handled)
	cu.wait(t, ns, obj.GetName()) // no child runs again in a later pass

	mu.Lock()
	defer mu.Unlock()
	if calls["a"] != 3 || calls["b"] != 1 || calls["c"] != 1 {
		t.Errorf("children called %v, want a 3 times, b and c once", calls)
	}
	result, _, _ := unstructured.NestedMap(got.Object, "status", "create_fn")
	want := fmt.Sprintf("call-%d", calls["create_fn"])
	if len(result) != 1 || result[want] != true {
		t.Errorf("status.create_fn = %v, want only %s: the result of the last invocation", result, want)
	}
	if r, _, _ := unstructured.NestedInt64(got.Object, "status", "create_fn/a", "retries"); r != 2 {
		t.Errorf("status[create_fn/a].retries = %d, want 2: each child's result is its own", r)
	}
	for _, line := range []string{"Handler 'create_fn/a' succeeded.", "Handler 'create_fn/b' succeeded.", "Handler 'create_fn/c' succeeded.", "Handler 'create_fn' succeeded."} {
		if n := log.Count(line); n != 1 {
			t.Errorf("%d lines %q, want 1", n, line)
		}
	}
	if n := log.Count("Handler 'create_fn/a' failed temporarily: not yet"); n != 2 {
		t.Errorf("%d temporary failures of create_fn/a, want 2", n)
	}
	// The records lived during the cycle (the parent's, a's) and are gone.
	joined := strings.Join(midCycle, " ")
	if !strings.Contains(joined, "kopf.zalando.org/create_fn ") && !strings.HasSuffix(joined, "kopf.zalando.org/create_fn") ||
		!strings.Contains(joined, "kopf.zalando.org/create_fn.a") {
		t.Errorf("records seen mid-cycle: %v, want the parent's and create_fn.a", midCycle)
	}
	assertNoProgress(t, got)
}
