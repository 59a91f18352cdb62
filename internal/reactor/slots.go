package reactor

import "sync"

// slots bound the passes in flight across every watcher of a run. Without a
// bound, an operator that finds thousands of unhandled objects at once (a
// start after downtime, a failover, a shard taken over, a bulk apply) ran a
// pass for each of them at once: a goroutine and a decoded body per object,
// and a patch per object sent to an API server that answered with 504s, so
// that handlers whose outcomes were not written ran again (10 000 objects:
// 18 507 handler calls, 8 504 failed patches, 996 MB of RSS).
//
// Objects waiting for a pass wait here in one FIFO, in the order their news
// came, as their worker only: no goroutine and no decoded body (the
// informer's store keeps the object compact). A worker whose goroutine
// lives (it slept for a delayed handler, or news came during its pass)
// and finds no free slot gives its goroutine up and joins the same FIFO
// (watcher.slot), so a busy object cannot pass ahead of the waiting ones,
// nor keep a goroutine while it waits.
type slots struct {
	// limit is the bound now: it follows the API's flow control, which
	// changes it as the API server's latency and errors change; <= 0 is no
	// bound. Nil: no bound.
	limit func() int

	mu    sync.Mutex
	busy  int
	queue []*slotWaiter // FIFO from head
	head  int
	// waiting counts the waiters in the queue.
	waiting int
}

// slotWaiter waits in the queue for a slot. grant is called with the slot
// taken, outside the lock; it returns false when the waiter does not use
// the slot (its watcher has stopped), which gives the slot back.
type slotWaiter struct {
	grant func() bool
}

func newSlots(limit func() int) *slots {
	return &slots{limit: limit}
}

// roomLocked reports whether one more pass may start now.
func (s *slots) roomLocked() bool {
	if s.limit == nil {
		return true
	}
	n := s.limit()
	return n <= 0 || s.busy < n
}

// take takes a slot if one is free and nobody waits for one, without
// waiting.
func (s *slots) take() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting > 0 || !s.roomLocked() {
		return false
	}
	s.busy++
	return true
}

// enqueue queues grant for the next free slot. It never calls grant
// itself, so callers may hold locks that grant takes.
func (s *slots) enqueue(grant func() bool) {
	s.mu.Lock()
	s.pushLocked(&slotWaiter{grant: grant})
	s.mu.Unlock()
}

// release gives a slot back, and grants it (or the room a raised limit
// made) to the waiters at the head of the queue.
func (s *slots) release() { s.settle(-1) }

// settle changes the slots taken by delta and grants free ones in FIFO
// order; a grant that is refused comes back and goes to the next waiter.
func (s *slots) settle(delta int) {
	s.mu.Lock()
	s.busy += delta
	for {
		var granted []*slotWaiter
		for s.waiting > 0 && s.roomLocked() {
			wt := s.popLocked()
			s.busy++
			granted = append(granted, wt)
		}
		s.mu.Unlock()
		refused := 0
		for _, wt := range granted {
			if !wt.grant() {
				refused++
			}
		}
		if refused == 0 {
			return
		}
		s.mu.Lock()
		s.busy -= refused
	}
}

// Waiting is the number of objects waiting for a pass (a gauge).
func (s *slots) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting
}

func (s *slots) pushLocked(wt *slotWaiter) {
	s.queue = append(s.queue, wt)
	s.waiting++
}

// popLocked takes the first waiter; callers know there is one (waiting >
// 0).
func (s *slots) popLocked() *slotWaiter {
	wt := s.queue[s.head]
	s.queue[s.head] = nil
	s.head++
	s.waiting--
	switch {
	case s.head == len(s.queue):
		s.queue, s.head = s.queue[:0], 0
	case s.head > len(s.queue)/2 && s.head > 64:
		// Give the consumed half of the backing array back.
		s.queue = append([]*slotWaiter(nil), s.queue[s.head:]...)
		s.head = 0
	}
	return wt
}
