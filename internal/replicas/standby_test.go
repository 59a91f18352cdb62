package replicas

import (
	"context"
	"slices"
	"testing"
	"time"

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

func TestWaitHaltedWaitsForTheReportOfThePeriodInForce(t *testing.T) {
	var s Standby
	ctx := context.Background()
	if err := s.WaitHalted(ctx, nil, nil); err == nil {
		t.Fatal("WaitHalted on a switch not paused: nil, want an error")
	}
	s.Pause("sharding")
	_, first, _ := s.Period()
	s.Halted(first)
	if err := s.WaitHalted(ctx, nil, nil); err != nil {
		t.Fatalf("WaitHalted after the report: %v", err)
	}
	s.Resume("sharding")
	s.Pause("sharding")
	paused, second, _ := s.Period()
	if !paused || second != first+1 {
		t.Fatalf("Period: paused=%v period=%d, want paused in period %d", paused, second, first+1)
	}
	s.Halted(first) // a stale report
	ticks := make(chan time.Time, 1)
	ticks <- time.Time{}
	ticked := 0
	done := make(chan error, 1)
	go func() { done <- s.WaitHalted(ctx, ticks, func() { ticked++ }) }()
	s.Halted(second)
	if err := <-done; err != nil {
		t.Fatalf("WaitHalted: %v", err)
	}
	if ticked > 1 {
		t.Errorf("tick called %d times, want at most once", ticked)
	}
}
