package reactor

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/handlers"
)

// patchesOf counts the operator's patches of KopfExamples by subresource
// ("" for the object, "status").
func (s *scenario) patchesOf() *counter {
	var c counter
	s.dyn.PrependReactor("patch", "kopfexamples", func(a clienttesting.Action) (bool, runtime.Object, error) {
		c.inc(a.GetSubresource())
		return false, nil, nil
	})
	return &c
}

func readyOf(u *unstructured.Unstructured) map[string]any {
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, it := range list {
		if c, _ := it.(map[string]any); c["type"] == "Ready" {
			return c
		}
	}
	return nil
}

// The framework's conditions ride in the patches a pass makes anyway: a
// handler's result already goes to the status subresource, and Ready goes
// with it (one status patch and one of the object, as without conditions);
// a pass without handlers writes no condition, so no status patch.
func TestConditionsRideInThePassesOwnPatches(t *testing.T) {
	for _, off := range []bool{false, true} {
		name := "on"
		if off {
			name = "off"
		}
		t.Run(name, func(t *testing.T) {
			s := newScenario(t)
			s.statusSubresource = true
			s.settings.Persistence.Conditions.Disabled = off
			patches := s.patchesOf()
			s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
				return map[string]any{"message": "hello"}, nil
			})
			s.create("kex1", map[string]any{"field": "value"})
			s.start()
			s.until("handled", func() bool {
				_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
				return ok && patches.get("status") == 1
			})
			ready := readyOf(s.get("kex1"))
			if off != (ready == nil) || !off && (ready["status"] != "True" || ready["reason"] != "HandlersSucceeded") {
				t.Errorf("Ready = %v with conditions off=%v", ready, off)
			}
			s.update("kex1", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "changed", "spec", "field")
			})
			s.until("the update handled (no handlers)", func() bool {
				v, _ := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
				return v == `{"spec":{"field":"changed"}}`+"\n"
			})
			s.stop()
			if st, main := patches.get("status"), patches.get(""); st != 1 || main != 2 {
				t.Errorf("%d status patches and %d of the object, want 1 and 2 (one of each for the creation, one of the object for the update)", st, main)
			}
		})
	}
}

// An update handled with success by a handler without a result changes no
// condition's status: its news (message, observedGeneration) waits for the
// next status write instead of costing a request of its own, unless
// Conditions.EveryPass asks for it.
func TestSuccessfulUpdateSpendsNoRequestOnConditions(t *testing.T) {
	for _, everyPass := range []bool{false, true} {
		name := "default"
		if everyPass {
			name = "every-pass"
		}
		t.Run(name, func(t *testing.T) {
			s := newScenario(t)
			s.statusSubresource = true
			s.settings.Persistence.Conditions.EveryPass = everyPass
			patches := s.patchesOf()
			var updates counter
			s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil })
			s.on(causes.Update, "update_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
				updates.inc(c.Name)
				return nil, nil
			})
			s.create("kex1", map[string]any{"field": "value"})
			s.start()
			s.waitWatching()
			s.until("created with Ready", func() bool {
				_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
				return ok && readyOf(s.get("kex1")) != nil
			})
			s.update("kex1", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "changed", "spec", "field")
				u.SetGeneration(2)
			})
			s.until("the update handled", func() bool {
				v, _ := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
				return v == `{"spec":{"field":"changed"}}`+"\n" && (!everyPass || patches.get("status") == 2)
			})
			s.stop()
			want := 1
			if everyPass {
				want = 2
			}
			if st, main := patches.get("status"), patches.get(""); st != want || main != 2 {
				t.Errorf("%d status patches and %d of the object, want %d and 2", st, main, want)
			}
			if n := updates.get("kex1"); n != 1 {
				t.Errorf("update handler called %d times, want 1", n)
			}
			if got := readyOf(s.get("kex1"))["observedGeneration"]; everyPass != (got == int64(2)) {
				t.Errorf("Ready's observedGeneration = %v with every pass %v", got, everyPass)
			}
		})
	}
}
