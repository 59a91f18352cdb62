package reactor

import (
	"context"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/handlers"
)

// BenchmarkUpdateHandled is the pass path of the steady state's updates,
// on a resource with the status subresource: each iteration changes the
// spec of a handled object and waits until the update is handled (a patch
// of the object; Ready's news kept back). The fake API's share is large;
// a CPU profile shows the shares of the framework's parts of a pass (the
// conditions, for one) rather than what an operator costs.
func BenchmarkUpdateHandled(b *testing.B) {
	const lastHandled = "kopf.zalando.org/last-handled-configuration"
	s := newScenario(b)
	s.statusSubresource = true
	noop := func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil }
	s.on(causes.Create, "create_fn", noop)
	s.on(causes.Update, "update_fn", noop)
	s.create("kex1", map[string]any{"field": "0"})
	s.start()
	s.waitWatching()
	s.until("created with Ready", func() bool {
		_, ok := annotation(s.get("kex1"), lastHandled)
		return ok && readyOf(s.get("kex1")) != nil
	})
	gen := int64(1)
	for b.Loop() {
		gen++
		field := strconv.FormatInt(gen, 10)
		s.update("kex1", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, field, "spec", "field")
			u.SetGeneration(gen)
		})
		want := `{"spec":{"field":"` + field + `"}}` + "\n"
		s.until("the update handled", func() bool {
			v, _ := annotation(s.get("kex1"), lastHandled)
			return v == want
		})
	}
	s.stop()
}
