package timers

import (
	"sync"
	"time"
)

// Schedule is a timer's timing, as registered.
type Schedule struct {
	// Interval is the time between invocations; 0 means none.
	Interval time.Duration
	// Idle is how long the object must be unchanged before the timer fires;
	// 0 means no idling.
	Idle time.Duration
	// Sharp keeps invocations on a grid of Interval measured from the
	// invocation's start, rather than Interval after it ends (compat: timers-sharp).
	Sharp bool
}

// Next says what a timer does after a successful invocation.
type Next int

const (
	// Sleep for the returned delay, then fire (after idling, if any).
	Sleep Next = iota
	// AwaitChange: an idle-only timer fires once per quiet period, so it
	// waits for the object to change again, then idles.
	AwaitChange
	// Once: a timer with neither interval nor idle has fired for good.
	Once
)

// IdleLeft is how long the timer must still wait for the object to be
// unchanged for Idle since its last essential change; 0 when it may fire.
// Changes only ever postpone the timer: a new change moves lastChange on,
// and the caller asks again after sleeping (compat: timers-idle).
func (s Schedule) IdleLeft(lastChange, now time.Time) time.Duration {
	if s.Idle <= 0 {
		return 0
	}
	return max(0, lastChange.Add(s.Idle).Sub(now))
}

// AfterSuccess is what to do after an invocation that started at started
// and succeeded, now. Errors do not come here: their delays (a
// TemporaryError's or the backoff) override the schedule (compat: timers-errors).
//
// A regular timer sleeps a whole Interval after the invocation ends, so a slow
// handler stretches the period (compat: timers-interval); a sharp timer sleeps
// what is left of the current Interval, measured from the invocation's start,
// and skips whole periods that a very slow invocation overran (compat:
// timers-sharp).
func (s Schedule) AfterSuccess(started, now time.Time) (time.Duration, Next) {
	switch {
	case s.Interval > 0 && s.Sharp:
		elapsed := max(0, now.Sub(started))
		return s.Interval - elapsed%s.Interval, Sleep
	case s.Interval > 0:
		return s.Interval, Sleep
	case s.Idle > 0:
		return 0, AwaitChange
	}
	return 0, Once
}

// Changes remembers when an object last changed essentially, for the idle
// times of its timers. Safe for concurrent use: the object's worker resets
// it while its timers read it.
type Changes struct {
	mu   sync.Mutex
	last time.Time
}

// NewChanges starts at now: the first sighting of an object counts as a
// change, so idling postpones even the first invocation (compat: timers-idle).
func NewChanges(now time.Time) *Changes { return &Changes{last: now} }

// Reset records a change at now.
func (c *Changes) Reset(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.After(c.last) {
		c.last = now
	}
}

// Last is the time of the last change.
func (c *Changes) Last() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}
