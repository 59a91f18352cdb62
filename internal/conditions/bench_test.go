package conditions

import (
	"testing"

	"github.com/kopfgo/kopfgo/patch"
)

// BenchmarkPass is the conditions' part of a pass on a resource with the
// status subresource: the changes for the cycle's state, merged into the
// object's list and kept back when they are no news (WriteOrDefer, as
// internal/reactor's pass calls it).
func BenchmarkPass(b *testing.B) {
	handled := Cycle{Title: "Update", Done: true, Handlers: []Handler{{ID: "a", Succeeded: true}}}
	retrying := Cycle{Title: "Update", Handlers: []Handler{{ID: "a", Retries: 2, Message: "not yet"}}}
	for _, bc := range []struct {
		name  string
		body  map[string]any
		cycle Cycle
	}{
		// The steady state: an update handled, Ready stays True.
		{"update-handled", object(2, cond(Ready, "True", ReasonSucceeded, "Creation handled: 1 handler succeeded.", 1, t0)), handled},
		{"update-handled-foreign", object(2, cond("Synced", "True", "Done", "", 1, t0), cond(Ready, "True", ReasonSucceeded, "Creation handled: 1 handler succeeded.", 1, t0)), handled},
		// News written at once: a retry's error.
		{"retrying", object(2, cond(Ready, "True", ReasonSucceeded, "Creation handled: 1 handler succeeded.", 1, t0)), retrying},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p := &patch.Patch{}
				for _, ch := range For(bc.cycle) {
					p.ChangeCondition(ch)
				}
				WriteOrDefer(bc.body, p, t1)
			}
		})
	}
}
