package replicas

import (
	"slices"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestStandbyFlipsOnFirstAndLastReason(t *testing.T) {
	var s Standby
	paused, ch := s.State()
	if paused || closed(ch) {
		t.Fatalf("zero Standby: paused=%v, changed closed=%v; want neither", paused, closed(ch))
	}
	s.Pause("peering")
	if !closed(ch) || !s.Paused() {
		t.Fatal("the first reason must pause and signal the change")
	}
	_, ch = s.State()
	s.Pause("freeze")
	s.Pause("peering") // held already
	s.Resume("peering")
	if closed(ch) {
		t.Fatal("reasons added or dropped while another holds must not signal a change")
	}
	if got := s.Reasons(); !slices.Equal(got, []string{"freeze"}) {
		t.Fatalf("reasons = %v, want [freeze]", got)
	}
	s.Resume("freeze")
	if !closed(ch) || s.Paused() {
		t.Fatal("dropping the last reason must resume and signal the change")
	}
	_, ch = s.State()
	s.Resume("unknown")
	if closed(ch) || s.Paused() {
		t.Fatal("dropping a reason not held must change nothing")
	}
}

func TestNilStandbyIsNeverPaused(t *testing.T) {
	var s *Standby
	s.Pause("x")
	paused, ch := s.State()
	if paused || ch != nil || s.Reasons() != nil {
		t.Fatalf("nil Standby: paused=%v changed=%v reasons=%v", paused, ch, s.Reasons())
	}
}
