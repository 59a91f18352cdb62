package replicas

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestServingWaitHaltedWaitsForTheReportOfTheVersionInForce(t *testing.T) {
	s := NewServing(shardSet("op", 4, nil))
	ctx := context.Background()
	if err := s.WaitHalted(ctx, nil, nil); err != nil {
		t.Fatalf("WaitHalted before any change: %v, want nil (nothing to stop)", err)
	}
	_, _, changed := s.State()
	s.Serve([]int{3, 1})
	if !closed(changed) {
		t.Fatal("Serve must signal the change")
	}
	set, first, _ := s.State()
	if !slices.Equal(set.Held, []int{1, 3}) {
		t.Fatalf("held %v, want [1 3] (sorted)", set.Held)
	}
	s.Halted(first)
	if err := s.WaitHalted(ctx, nil, nil); err != nil {
		t.Fatalf("WaitHalted after the report: %v", err)
	}
	s.Serve([]int{1})
	_, second, _ := s.State()
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
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	s.Serve(nil)
	if err := s.WaitHalted(cancelled, nil, nil); err == nil {
		t.Error("WaitHalted without a report, its context ended: nil, want an error")
	}
}
