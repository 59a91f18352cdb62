package timers

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestAfterSuccess(t *testing.T) {
	const s = time.Second
	for _, tc := range []struct {
		name     string
		sch      Schedule
		started  time.Duration
		finished time.Duration
		delay    time.Duration
		next     Next
	}{
		// (compat: timers-interval): a whole interval after the end, whatever
		// the handler took.
		{"interval after a quick handler", Schedule{Interval: s}, 0, 0, s, Sleep},
		{"interval after a slow handler", Schedule{Interval: s}, 0, 500 * time.Millisecond, s, Sleep},
		// (compat: timers-sharp): what is left of the grid period, from the start.
		{"sharp after a quick handler", Schedule{Interval: s, Sharp: true}, 0, 0, s, Sleep},
		{"sharp after 0.3s", Schedule{Interval: s, Sharp: true}, 0, 300 * time.Millisecond, 700 * time.Millisecond, Sleep},
		{"sharp after 2.25 periods skips the overrun ones", Schedule{Interval: 2 * s, Sharp: true}, 10 * s, 14500 * time.Millisecond, 1500 * time.Millisecond, Sleep},
		{"sharp exactly on the period boundary", Schedule{Interval: s, Sharp: true}, 0, 3 * s, s, Sleep},
		{"interval with idle still sleeps the interval", Schedule{Interval: s, Idle: 10 * s}, 0, 0, s, Sleep},
		{"idle only waits for the next change", Schedule{Idle: 3 * s}, 0, s, 0, AwaitChange},
		{"neither fires once", Schedule{}, 0, 0, 0, Once},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, next := tc.sch.AfterSuccess(at(tc.started), at(tc.finished))
			if d != tc.delay || next != tc.next {
				t.Errorf("AfterSuccess = %v, %v; want %v, %v", d, next, tc.delay, tc.next)
			}
		})
	}
}

func TestIdleLeft(t *testing.T) {
	const s = time.Second
	for _, tc := range []struct {
		name       string
		idle       time.Duration
		lastChange time.Duration
		now        time.Duration
		want       time.Duration
	}{
		{"no idle never waits", 0, 0, 0, 0},
		{"just changed", 3 * s, 0, 0, 3 * s},
		{"partly idle", 3 * s, 0, 2 * s, s},
		{"idle long enough", 3 * s, 0, 3 * s, 0},
		{"idle longer than needed", 3 * s, 0, 10 * s, 0},
		{"a later change postpones", 3 * s, 5 * s, 6 * s, 2 * s},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Schedule{Idle: tc.idle}.IdleLeft(at(tc.lastChange), at(tc.now))
			if got != tc.want {
				t.Errorf("IdleLeft = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSharpGridHoldsOverManyTicks drives a sharp timer for many periods with
// handlers of varying durations: every invocation starts on the grid, which
// a regular timer would drift off (compat: timers-sharp).
func TestSharpGridHoldsOverManyTicks(t *testing.T) {
	const period = time.Second
	durations := []time.Duration{300, 0, 999, 1, 2500, 40, 1000, 700} // milliseconds
	for _, sharp := range []bool{true, false} {
		sch := Schedule{Interval: period, Sharp: sharp}
		now := t0
		onGrid := true
		for _, ms := range durations {
			started := now
			if started.Sub(t0)%period != 0 {
				onGrid = false
			}
			now = now.Add(ms * time.Millisecond)
			d, next := sch.AfterSuccess(started, now)
			if next != Sleep || d <= 0 || d > period {
				t.Fatalf("sharp=%v: AfterSuccess = %v, %v", sharp, d, next)
			}
			now = now.Add(d)
		}
		if onGrid != sharp {
			t.Errorf("sharp=%v: every start on the 1s grid = %v, want %v", sharp, onGrid, sharp)
		}
	}
}

func TestChangesOnlyMoveForward(t *testing.T) {
	c := NewChanges(at(5 * time.Second))
	c.Reset(at(3 * time.Second)) // a late report of an older change
	if got := c.Last(); !got.Equal(at(5 * time.Second)) {
		t.Errorf("Last = %v after an older reset, want it unchanged", got)
	}
	c.Reset(at(7 * time.Second))
	if got := c.Last(); !got.Equal(at(7 * time.Second)) {
		t.Errorf("Last = %v, want the newer change", got)
	}
}
