package replicas

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Serving is the shards a replica's reactor serves, shared by the sharder,
// which changes them, and the reactor, which follows them shard by shard and
// reports when the shards taken out have stopped (Halted). It is to one
// shard what the Standby is to the whole replica: a handover stops and
// starts only the shards that move, and the shards kept go on untouched, so
// their objects are neither listed again nor handled twice, and their
// daemons and timers keep running.
type Serving struct {
	mu  sync.Mutex
	set ShardSet
	// version counts the changes; halted is the last version whose shards
	// taken out the reactor reported stopped.
	version, halted uint64
	// changed is closed and replaced on every change; halt on every change
	// and every report.
	changed, halt chan struct{}
}

// NewServing serves the shards of set.
func NewServing(set ShardSet) *Serving { return &Serving{set: set} }

// Set are the shards served now.
func (s *Serving) Set() ShardSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.set
}

// Serve makes held (any order) the shards served. The reactor stops the
// others' watchers at once, and starts the new ones' watchers: a shard is
// served only once its Lease is held.
func (s *Serving) Serve(held []int) {
	held = slices.Sorted(slices.Values(held))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set.Held = held
	s.version++
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	s.wakeLocked()
}

func (s *Serving) wakeLocked() {
	if s.halt != nil {
		close(s.halt)
		s.halt = nil
	}
}

// State is the set served, the number of its version (for Halted), and a
// channel closed on the next change.
func (s *Serving) State() (set ShardSet, version uint64, changed <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.set, s.version, s.changed
}

// Halted is the reactor's report that everything it ran for the shards
// outside the set of this version has stopped: handlers finished, daemons
// and timers stopped and returned. A report of an older version is
// ignored.
func (s *Serving) Halted(version uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if version == s.version && version > s.halted {
		s.halted = version
		s.wakeLocked()
	}
}

// WaitHalted waits until the reactor has reported the version in force
// halted, calling tick whenever ticks fires meanwhile (the sharder renews
// its Leases there, and may change the set again). It fails only if ctx
// ends.
func (s *Serving) WaitHalted(ctx context.Context, ticks <-chan time.Time, tick func()) error {
	for {
		s.mu.Lock()
		if s.halted == s.version {
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
