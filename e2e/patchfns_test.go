//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopfgo/kopfgo"
)

// A changing handler's patch functions run on the object's latest state and
// go as a JSON patch guarded by a test of the resourceVersion: another
// writer's change that lands between the read and the patch makes the test
// fail, the functions run again on the newer object, and neither change is
// lost (compat: handlers-patch-fns).
func TestPatchFnsUnderAConcurrentWriter(t *testing.T) {
	ns := namespace(t)
	var calls atomic.Int32
	log := embedded(t, ns, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", func(ctx context.Context, c *kopfgo.Change) (any, error) {
			name := c.Name
			c.Patch.Spec()["merged"] = "yes"
			c.Patch.Fns = append(c.Patch.Fns, func(body map[string]any) error {
				if calls.Add(1) == 1 {
					// The other writer, between this read and the patch.
					_, err := dyn(t).Resource(kexGVR).Namespace(ns).Patch(context.Background(), name, types.JSONPatchType,
						[]byte(`[{"op":"add","path":"/spec/items/-","value":"other"}]`), metav1.PatchOptions{})
					if err != nil {
						return fmt.Errorf("the other writer: %w", err)
					}
				}
				spec := body["spec"].(map[string]any)
				spec["items"] = append(spec["items"].([]any), "mine")
				return nil
			})
			return nil, nil
		}, kopfgo.ID("transform"))
	})
	obj := objYAML(t)
	obj["spec"].(map[string]any)["items"] = []any{"first"}
	u := createKex(t, ns, obj)
	log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", 1)
	got := waitKex(t, ns, u.GetName(), "both changes", func(u *unstructured.Unstructured) bool {
		items, _, _ := unstructured.NestedSlice(u.Object, "spec", "items")
		return len(items) == 3
	})
	items, _, _ := unstructured.NestedSlice(got.Object, "spec", "items")
	merged, _, _ := unstructured.NestedString(got.Object, "spec", "merged")
	if fmt.Sprint(items) != "[first other mine]" || merged != "yes" {
		t.Errorf("spec = %v", got.Object["spec"])
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the functions ran %d times; want 2 (once more after the conflict)", n)
	}
}
