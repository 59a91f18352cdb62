package replicas

import (
	"sort"
	"sync"
)

// Standby is the one idea of standing by that every replica mode feeds: the
// set of reasons the operator is paused for (each mode adds and drops only
// its own). The zero value is not paused; a nil *Standby is never paused
// and ignores Pause/Resume, so that code can hold one unconditionally.
type Standby struct {
	mu      sync.Mutex
	reasons map[string]bool
	// changed is closed and replaced whenever the paused state flips.
	changed chan struct{}
}

// Pause adds a reason to pause (a no-op if it is held already).
func (s *Standby) Pause(reason string) { s.set(reason, true) }

// Resume drops a reason to pause (a no-op if it is not held).
func (s *Standby) Resume(reason string) { s.set(reason, false) }

// Set adds or drops a reason.
func (s *Standby) Set(reason string, paused bool) { s.set(reason, paused) }

func (s *Standby) set(reason string, on bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	was := len(s.reasons) > 0
	if on {
		if s.reasons == nil {
			s.reasons = map[string]bool{}
		}
		s.reasons[reason] = true
	} else {
		delete(s.reasons, reason)
	}
	if was == (len(s.reasons) > 0) {
		return
	}
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// State tells whether the operator is paused, with a channel closed on the
// next flip between paused and not paused (reasons added to a paused
// Standby, or dropped while others remain, do not close it).
func (s *Standby) State() (paused bool, changed <-chan struct{}) {
	if s == nil {
		return false, nil // never changes
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return len(s.reasons) > 0, s.changed
}

// Paused tells whether any reason is held.
func (s *Standby) Paused() bool {
	paused, _ := s.State()
	return paused
}

// Reasons are the reasons held, sorted.
func (s *Standby) Reasons() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.reasons))
	for r := range s.reasons {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}
