package reactor

import (
	"slices"
	"sync/atomic"
	"testing"
)

// grants records the order in which queued waiters get their slots.
type grants struct {
	order []int
}

func (g *grants) waiter(id int, use bool) func() bool {
	return func() bool {
		g.order = append(g.order, id)
		return use
	}
}

func TestSlotsGrantInArrivalOrderWithinTheLimit(t *testing.T) {
	var limit atomic.Int64
	limit.Store(2)
	s := newSlots(func() int { return int(limit.Load()) })
	if !s.take() || !s.take() {
		t.Fatal("the first two takes must succeed")
	}
	if s.take() {
		t.Fatal("a third take beyond the limit succeeded")
	}
	g := &grants{}
	for id := range 5 {
		s.enqueue(g.waiter(id, true))
	}
	if s.Waiting() != 5 {
		t.Fatalf("waiting = %d, want 5", s.Waiting())
	}
	if s.take() {
		t.Fatal("a take passed the queue")
	}
	s.release()
	if !slices.Equal(g.order, []int{0}) {
		t.Fatalf("granted %v after one release, want [0]", g.order)
	}
	// A raised limit is used at the next release: the freed slot and the
	// new room go to the next two in the queue.
	limit.Store(3)
	s.release()
	if !slices.Equal(g.order, []int{0, 1, 2}) {
		t.Fatalf("granted %v after raising the limit, want [0 1 2]", g.order)
	}
	// A lowered limit grants nothing until the passes in flight are below it.
	limit.Store(1)
	s.release()
	s.release()
	if !slices.Equal(g.order, []int{0, 1, 2}) {
		t.Fatalf("granted %v above a lowered limit, want [0 1 2]", g.order)
	}
	s.release()
	if !slices.Equal(g.order, []int{0, 1, 2, 3}) {
		t.Fatalf("granted %v at the lowered limit, want [0 1 2 3]", g.order)
	}
	if s.Waiting() != 1 {
		t.Errorf("waiting = %d, want 1", s.Waiting())
	}
}

func TestSlotsPassARefusedGrantOn(t *testing.T) {
	s := newSlots(func() int { return 1 })
	s.take()
	g := &grants{}
	s.enqueue(g.waiter(0, false)) // its watcher has stopped
	s.enqueue(g.waiter(1, false))
	s.enqueue(g.waiter(2, true))
	s.release()
	if !slices.Equal(g.order, []int{0, 1, 2}) {
		t.Fatalf("granted %v, want [0 1 2]", g.order)
	}
	if s.take() {
		t.Error("the slot of the accepted grant was free again")
	}
}

func TestSlotsWithoutALimit(t *testing.T) {
	for _, limit := range []func() int{nil, func() int { return 0 }} {
		s := newSlots(limit)
		for range 1000 {
			if !s.take() {
				t.Fatal("take failed without a limit")
			}
		}
	}
}
