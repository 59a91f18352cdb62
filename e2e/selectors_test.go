//go:build e2e

package e2e

import (
	"testing"

	"github.com/kopfgo/kopfgo"
)

// (compat: resources-selectors, handlers-dedup): the selector forms name the
// same resource, and one function registered through several of them runs once
// per change.
func TestSelectorFormsServeTheSameResourceOnce(t *testing.T) {
	ns := namespace(t)
	var viaForms, byKind countingCreate
	log := embedded(t, ns, func(op *kopfgo.Operator) {
		for _, sel := range []string{"kopf.dev/v1/kopfexamples", "kopfexamples.kopf.dev", "kopfexamples", "kex"} {
			op.On.Create(sel, viaForms.fn, kopfgo.ID("forms"))
		}
		op.On.Create("KopfExample", byKind.fn, kopfgo.ID("by_kind"))
	})
	obj := createKex(t, ns, objYAML(t))
	waitKex(t, ns, obj.GetName(), "handled", handled)
	log.WaitFor(t, "Creation is processed: 2 succeeded; 0 failed.", 1)
	if n := viaForms.get(obj.GetName()); n != 1 {
		t.Errorf("the function registered through four selector forms ran %d times, want 1", n)
	}
	if n := byKind.get(obj.GetName()); n != 1 {
		t.Errorf("the handler selected by kind ran %d times, want 1", n)
	}
}
