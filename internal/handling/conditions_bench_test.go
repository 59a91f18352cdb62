package handling

import (
	"testing"

	"github.com/kopfgo/kopfgo/patch"
)

// BenchmarkPass is the conditions' part of a pass on a resource with the
// status subresource: the changes for the cycle's state, merged into the
// object's list and kept back when they are no news (WriteConditionsOrDefer, as
// internal/reactor's pass calls it).
func BenchmarkPass(b *testing.B) {
	handled := cycleState{Title: "Update", Done: true, Handlers: []handlerState{{ID: "a", Succeeded: true}}}
	retrying := cycleState{Title: "Update", Handlers: []handlerState{{ID: "a", Retries: 2, Message: "not yet"}}}
	for _, bc := range []struct {
		name  string
		body  map[string]any
		cycle cycleState
	}{
		// The steady state: an update handled, Ready stays True.
		{"update-handled", object(2, cond(ConditionReady, "True", ReasonSucceeded, "Creation handled: 1 handler succeeded.", 1, t0)), handled},
		{"update-handled-foreign", object(2, cond("Synced", "True", "Done", "", 1, t0), cond(ConditionReady, "True", ReasonSucceeded, "Creation handled: 1 handler succeeded.", 1, t0)), handled},
		// News written at once: a retry's error.
		{"retrying", object(2, cond(ConditionReady, "True", ReasonSucceeded, "Creation handled: 1 handler succeeded.", 1, t0)), retrying},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p := &patch.Patch{}
				for _, ch := range conditionsFor(bc.cycle) {
					p.ChangeCondition(ch)
				}
				WriteConditionsOrDefer(bc.body, p, t1)
			}
		})
	}
}
