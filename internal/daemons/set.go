package daemons

import (
	"sync"
	"time"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/timers"
)

// Set is the daemons and timers of one object. The object's worker calls
// it on every pass; the daemons themselves run in goroutines of their own.
// Safe for concurrent use.
type Set struct {
	m       *Manager
	obj     Object
	changes *timers.Changes

	mu sync.Mutex
	// running holds every daemon whose goroutine has not returned, stopping
	// and abandoned ones included: a handler is never spawned twice for one
	// object at a time (compat: daemons-filters).
	running map[string]*daemon
	// forever holds the handlers that exited on their own (returned, or
	// failed permanently): not spawned again in this process (compat: daemons-errors).
	forever map[string]bool
}

// Sync spawns the matching handlers that are neither running nor done for good,
// and asks the running ones that no longer match to stop with
// ErrFiltersMismatch (compat: daemons-spawn, daemons-filters). It is called on
// every pass over an object that is not being deleted.
func (s *Set) Sync(matching []*handling.Spawning) {
	s.mu.Lock()
	want := make(map[string]bool, len(matching))
	for _, h := range matching {
		want[h.ID] = true
		if s.running[h.ID] != nil || s.forever[h.ID] {
			continue
		}
		d := newDaemon(s, h)
		if !s.m.track(d) {
			break // the operator is exiting
		}
		s.running[h.ID] = d
		d.start()
	}
	var stopping []*daemon
	for id, d := range s.running {
		if !want[id] && d.stop(handlers.ErrFiltersMismatch) {
			stopping = append(stopping, d)
		}
	}
	s.mu.Unlock()
	s.m.awaitInstantExit(stopping)
}

// Stop asks every daemon and timer of the object to stop, e.g. with
// ErrResourceDeleted when the object is being deleted.
func (s *Set) Stop(reason error) { s.m.awaitInstantExit(s.stopAll(reason)) }

// Halt asks every daemon and timer of the object to stop with reason, and
// returns a wait for all of them to return or be abandoned, those already
// stopping included. A watcher that stops (a pause, a resource gone) halts
// its objects' sets and waits before its successor starts, so that no
// daemon runs twice at once for one object.
func (s *Set) Halt(reason error) (wait func()) {
	s.stopAll(reason)
	s.mu.Lock()
	all := make([]*daemon, 0, len(s.running))
	for _, d := range s.running {
		all = append(all, d)
	}
	s.mu.Unlock()
	return func() {
		for _, d := range all {
			<-d.settled
		}
	}
}

// Forget stops every daemon and timer of an object that is gone, with
// ErrResourceDeleted, and returns without waiting for any.
func (s *Set) Forget() { s.stopAll(handlers.ErrResourceDeleted) }

func (s *Set) stopAll(reason error) []*daemon {
	s.mu.Lock()
	defer s.mu.Unlock()
	var stopping []*daemon
	for _, d := range s.running {
		if d.stop(reason) {
			stopping = append(stopping, d)
		}
	}
	return stopping
}

// Holding reports whether a daemon or timer still holds the object: it runs
// and has not been abandoned. A deleted object keeps its finalizer until
// nothing holds it (compat: daemons-finalizer).
func (s *Set) Holding() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.running {
		if !d.isSettled() {
			return true
		}
	}
	return false
}

// Requires reports whether the object needs the finalizer for its daemons
// and timers: one of the matching handlers may still run (it has not exited
// for good), or one still holds the object (compat: persistence-finalizer).
func (s *Set) Requires(matching []*handling.Spawning) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range matching {
		if !s.forever[h.ID] {
			return true
		}
	}
	for _, d := range s.running {
		if !d.isSettled() {
			return true
		}
	}
	return false
}

// Changed records an essential change of the object at now: idle timers
// start their idle time again (compat: timers-idle).
func (s *Set) Changed(now time.Time) { s.changes.Reset(now) }

// exited forgets a daemon whose goroutine has returned; one that returned on
// its own is done for good in this process.
func (s *Set) exited(d *daemon, forever bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[d.h.ID] == d {
		delete(s.running, d.h.ID)
	}
	if forever {
		s.forever[d.h.ID] = true
	}
}
