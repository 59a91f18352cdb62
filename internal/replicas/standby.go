package replicas

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"
)

// Standby is the one idea of standing by that every replica mode feeds: the
// set of reasons the operator is paused for (each mode adds and drops only
// its own), and the reactor's report that it has halted. The zero value is
// not paused; a nil *Standby is never paused and ignores Pause/Resume, so
// that code can hold one unconditionally.
type Standby struct {
	mu      sync.Mutex
	reasons map[string]bool
	// changed is closed and replaced whenever the paused state flips.
	changed chan struct{}
	// period counts the flips to paused; halted is the last period the
	// reactor reported as halted; halt is closed and replaced on each
	// report and each flip.
	period, halted uint64
	halt           chan struct{}
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
	if !was {
		s.period++
	}
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	s.wakeLocked()
}

func (s *Standby) wakeLocked() {
	if s.halt != nil {
		close(s.halt)
		s.halt = nil
	}
}

// Period is State with the number of the paused period in force (it grows
// by one on every flip to paused): the reactor reports the period it has
// halted for with Halted.
func (s *Standby) Period() (paused bool, period uint64, changed <-chan struct{}) {
	if s == nil {
		return false, 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return len(s.reasons) > 0, s.period, s.changed
}

// Halted is the reactor's report that everything it ran in the paused
// period is stopped: handlers finished, daemons and timers stopped and
// returned. A report of a period that has ended is ignored.
func (s *Standby) Halted(period uint64) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reasons) > 0 && period == s.period && period > s.halted {
		s.halted = period
		s.wakeLocked()
	}
}

// WaitHalted waits until the switch is paused and the reactor has halted
// for the paused period in force, calling tick whenever ticks fires
// meanwhile (a caller renews its Leases there). It fails if the
// switch is resumed meanwhile, or ctx ends.
func (s *Standby) WaitHalted(ctx context.Context, ticks <-chan time.Time, tick func()) error {
	for {
		s.mu.Lock()
		if len(s.reasons) == 0 {
			s.mu.Unlock()
			return errNotPaused
		}
		if s.halted == s.period {
			s.mu.Unlock()
			return nil
		}
		if s.halt == nil {
			s.halt = make(chan struct{})
		}
		wake := s.halt
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-ticks:
			tick()
		}
	}
}

var errNotPaused = errors.New("the operator was resumed before it halted")

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
