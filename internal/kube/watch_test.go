package kube

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	testingclock "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func waitClosed(t *testing.T, ch <-chan watch.Event) {
	t.Helper()
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-time.After(30 * time.Second): // a failure detector
			t.Fatal("the stream was not ended")
		}
	}
}

func TestWatchdogEndsSilentStreams(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	inner := watch.NewFake()
	var inactive atomic.Int32
	w := newWatchdog(inner, WatchOptions{InactivityTimeout: 10 * time.Second, Clock: clk, OnInactive: func() { inactive.Add(1) }}, nil)
	// Events keep it alive.
	for range 3 {
		for !clk.HasWaiters() {
			runtime.Gosched() // the watchdog is about to set its timer
		}
		clk.Step(6 * time.Second)
		go inner.Add(&unstructured.Unstructured{})
		if ev := <-w.ResultChan(); ev.Type != watch.Added {
			t.Fatalf("event = %v", ev.Type)
		}
	}
	if inactive.Load() != 0 {
		t.Fatal("ended although events kept coming")
	}
	for !clk.HasWaiters() {
		runtime.Gosched() // the watchdog is about to set its timer
	}
	clk.Step(10 * time.Second)
	waitClosed(t, w.ResultChan())
	if inactive.Load() != 1 || !inner.IsStopped() {
		t.Errorf("inactive = %d, inner stopped = %v", inactive.Load(), inner.IsStopped())
	}
}

func TestWatchdogClientTimeout(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	inner := watch.NewFake()
	w := newWatchdog(inner, WatchOptions{ClientTimeout: 30 * time.Second, Clock: clk}, nil)
	for clk.Waiters() < 2 {
		runtime.Gosched() // the watchdog is about to set its timers: inactivity, then the deadline
	}
	clk.Step(30 * time.Second)
	waitClosed(t, w.ResultChan())
	if !inner.IsStopped() {
		t.Error("the inner watch was not stopped")
	}
}

func TestWatchdogStop(t *testing.T) {
	inner := watch.NewFake()
	w := newWatchdog(inner, WatchOptions{InactivityTimeout: time.Hour, Clock: testingclock.NewFakeClock(time.Now())}, nil)
	w.Stop()
	w.Stop()
	waitClosed(t, w.ResultChan())
}
