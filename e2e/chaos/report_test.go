package chaos

import (
	"strings"
	"testing"
)

// A journal of two processes: 100 dies with create's success for kex-00001
// in flight (not on the object) and kex-00002's already persisted; 200
// runs create again for both.
const twoProcesses = `start operator - - 100
inv create chaos/kex-00001 - 100
ret create chaos/kex-00001 - 100
inv create chaos/kex-00002 - 100
ret create chaos/kex-00002 - 100
signal-killed operator - - 100
exit operator - - 100
start operator - - 200
inv create chaos/kex-00001 - 200
ret create chaos/kex-00001 - 200
inv create chaos/kex-00002 - 200
ret create chaos/kex-00002 - 200
`

func TestReadJournalChecksDuplicatesAgainstTheSuccessesInFlight(t *testing.T) {
	v1 := map[string]any{"spec": map[string]any{"field": "v1"}}
	atDeath := snapshot{
		"kex-00001": body(t, "v1", nil, nil), // create's success not on it
		"kex-00002": body(t, "v1", nil, v1),  // handled: its diff-base
	}
	tests := []struct {
		name                          string
		snapshots                     map[int]snapshot
		inFlight, ranAgain, persisted int
		unchecked                     int
	}{
		{"checked", map[int]snapshot{100: atDeath}, 1, 1, 1, 0},
		{"no listing at the death", map[int]snapshot{100: nil}, 0, 0, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := &Report{Calls: map[string]int{}, Handled: map[string]int{}, Duplicates: map[string]int{}}
			if _, err := rep.readJournal(strings.NewReader(twoProcesses), tt.snapshots); err != nil {
				t.Fatal(err)
			}
			if rep.DuplicatesAfterDeath != 2 || rep.DuplicatesAfterFault != 0 || rep.DuplicatesUnexplained != 0 {
				t.Errorf("duplicates after a death %d, after a fault %d, unexplained %d; want 2, 0, 0",
					rep.DuplicatesAfterDeath, rep.DuplicatesAfterFault, rep.DuplicatesUnexplained)
			}
			if rep.InFlightAtDeaths != tt.inFlight || rep.DuplicatesAfterDeathInFlight != tt.ranAgain ||
				rep.DuplicatesAfterDeathPersist != tt.persisted || rep.DuplicatesAfterDeathUnchk != tt.unchecked {
				t.Errorf("in flight %d, ran again %d, persisted %d, unchecked %d; want %d, %d, %d, %d",
					rep.InFlightAtDeaths, rep.DuplicatesAfterDeathInFlight, rep.DuplicatesAfterDeathPersist, rep.DuplicatesAfterDeathUnchk,
					tt.inFlight, tt.ranAgain, tt.persisted, tt.unchecked)
			}
		})
	}
}

// A success repeated in one process with a fault in between is after a
// fault; with nothing in between, unexplained.
func TestReadJournalClassifiesRepetitionsInOneProcess(t *testing.T) {
	journal := `start operator - - 100
ret update chaos/kex-00001 v2 100
fault proxy-5xx - - 0
fault-end proxy-5xx - - 0
inv update chaos/kex-00001 v2 100
ret update chaos/kex-00001 v2 100
inv update chaos/kex-00001 v2 100
ret update chaos/kex-00001 v2 100
`
	rep := &Report{Calls: map[string]int{}, Handled: map[string]int{}, Duplicates: map[string]int{}}
	if _, err := rep.readJournal(strings.NewReader(journal), nil); err != nil {
		t.Fatal(err)
	}
	if rep.DuplicatesAfterDeath != 0 || rep.DuplicatesAfterFault != 1 || rep.DuplicatesUnexplained != 1 {
		t.Errorf("duplicates after a death %d, after a fault %d, unexplained %d; want 0, 1, 1",
			rep.DuplicatesAfterDeath, rep.DuplicatesAfterFault, rep.DuplicatesUnexplained)
	}
}
