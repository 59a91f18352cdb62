package plan

import (
	"testing"

	"github.com/kopfgo/kopfgo/internal/causes"
)

// TestHoldsForeseesAfter: what Holds says before a cycle runs is what After
// decides once the cycle is done, for every combination of the facts After
// reads and every reason a cycle runs for.
func TestHoldsForeseesAfter(t *testing.T) {
	reasons := []causes.Reason{causes.Create, causes.Update, causes.Resume, causes.Delete}
	for _, factReason := range reasons {
		for _, reason := range reasons {
			for bits := range 8 {
				f := Facts{Reason: factReason, HasFinalizer: bits&1 != 0, DaemonsHolding: bits&2 != 0, Deleting: bits&4 != 0}
				want := reason == causes.Delete && After(f, Outcome{Done: true, Ran: true}).Action == Hold
				if got := Holds(f, reason); got != want {
					t.Errorf("Holds(%+v, %s) = %v, After says %v", f, reason, got, want)
				}
			}
		}
	}
}
