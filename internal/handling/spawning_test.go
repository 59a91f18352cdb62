package handling

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/internal/handlers"
	testingclock "k8s.io/utils/clock/testing"
)

func monitorFn(ctx context.Context, s *handlers.Spawn) (any, error) { return nil, nil }

func TestSpawningRegistrationErrorsNameTheHandler(t *testing.T) {
	closure := func(ctx context.Context, s *handlers.Spawn) (any, error) { return nil, nil }
	tests := []struct {
		name      string
		kind      SpawnKind
		fn        handlers.SpawnFunc
		configure func(*Spawning)
		want      string
	}{
		{"closure without id", KindDaemon, closure, nil, "give it kopfgo.ID"},
		{"nil fn", KindTimer, nil, func(s *Spawning) { s.Interval = time.Second }, "function is nil"},
		{"timer without a schedule", KindTimer, monitorFn, nil, "a timer needs an Interval, an Idle time, or both"},
		{"sharp without an interval", KindTimer, monitorFn, func(s *Spawning) { s.Idle, s.Sharp = time.Second, true }, "Sharp needs an Interval"},
		{"negative interval", KindTimer, monitorFn, func(s *Spawning) { s.Interval = -time.Second }, "must not be negative"},
		{"negative cancellation timeout", KindDaemon, monitorFn, func(s *Spawning) { s.CancellationTimeout = -1 }, "must not be negative"},
		{"negative initial delay", KindDaemon, monitorFn, func(s *Spawning) { s.InitialDelay = -1 }, "InitialDelay"},
		{"negative retries", KindDaemon, monitorFn, func(s *Spawning) { s.Retries = -1 }, "Retries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Registry
			r.AddSpawning(SpawnRegistration{Resource: "kopfexamples", Kind: tt.kind, Fn: tt.fn, Configure: tt.configure})
			err := r.Err()
			if !errors.Is(err, handlers.ErrRegistration) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrRegistration mentioning %q", err, tt.want)
			}
			if want := tt.kind.String() + `("kopfexamples") handler`; !strings.Contains(err.Error(), want) {
				t.Errorf("err does not name the registration (%s): %v", want, err)
			}
			if len(r.Spawning()) != 0 {
				t.Error("an invalid registration was recorded")
			}
		})
	}
}

func TestSpawningIDsAndDuplicates(t *testing.T) {
	var r Registry
	r.AddSpawning(SpawnRegistration{Resource: "kopfexamples", Kind: KindDaemon, Fn: monitorFn})
	r.AddSpawning(SpawnRegistration{Resource: "kopfexamples", Kind: KindTimer, Fn: monitorFn,
		Configure: func(s *Spawning) { s.ID, s.Interval = "tick", time.Second }})
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	got := r.Spawning()
	if len(got) != 2 || got[0].ID != "monitorFn" || got[0].Title() != "Daemon 'monitorFn'" || got[1].Title() != "Timer 'tick'" {
		t.Fatalf("registered %+v", got)
	}
	// A daemon and a timer of one object share one namespace of ids: their
	// results both go to status.<id>.
	r.AddSpawning(SpawnRegistration{Resource: "kopfexamples", Kind: KindTimer, Fn: monitorFn,
		Configure: func(s *Spawning) { s.Interval = time.Second }})
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), `duplicate id "monitorFn" (also On.Daemon`) {
		t.Fatalf("err = %v, want a duplicate id", err)
	}
	if sels := r.Selectors(); len(sels) != 1 {
		t.Errorf("selectors = %v, want the daemons' one resource", sels)
	}
}

// (compat: daemons-stopped): Sleep returns early, and false, once the stop is
// requested; the first reason wins.
func TestSpawnSleepReturnsEarlyOnStop(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	stopper := NewStopper()
	s := handlers.NewSpawn(handlers.Object{}, handlers.Attempt{}, handlers.SpawnEnv{Stopper: stopper, Clock: clk})
	slept := make(chan bool)
	go func() { slept <- s.Sleep(context.Background(), time.Minute) }()
	for !clk.HasWaiters() {
		runtime.Gosched() // until the sleep has started
	}
	clk.Step(time.Minute)
	if !<-slept {
		t.Error("Sleep reported an interruption after the whole minute")
	}
	go func() { slept <- s.Sleep(context.Background(), time.Hour) }()
	for !clk.HasWaiters() {
		runtime.Gosched()
	}
	stopper.Stop(handlers.ErrResourceDeleted)
	stopper.Stop(handlers.ErrOperatorExiting)
	if <-slept || !s.Stopped() || s.StopReason() != handlers.ErrResourceDeleted {
		t.Errorf("after the stop: Stopped=%v StopReason=%v", s.Stopped(), s.StopReason())
	}
	if s.Sleep(context.Background(), time.Hour) {
		t.Error("Sleep after the stop did not return false at once")
	}
}
