package reactor

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A pass may block for long (a slow handler, an API call): the pool never
// makes another object's pass wait for it.
func TestPoolNeverQueuesBehindABlockedPass(t *testing.T) {
	r := newPool()
	const n = 10
	var started sync.WaitGroup
	started.Add(n)
	release := make(chan struct{})
	var ran atomic.Int32
	var done sync.WaitGroup
	for range n {
		done.Go(func() {
			r.run(func() {
				started.Done()
				<-release // every pass blocks until all have started
				ran.Add(1)
			})
		})
	}
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	select {
	case <-all:
	case <-time.After(10 * time.Second): // a failure detector, not a measurement
		t.Fatal("blocked passes kept the others from starting")
	}
	close(release)
	done.Wait()
	if got := ran.Load(); got != n {
		t.Fatalf("%d passes ran, want %d", got, n)
	}
	// Sequential passes after that reuse the idle goroutines, and stop
	// joins them all (goleak in TestMain checks nothing is left).
	for range 3 {
		r.run(func() { ran.Add(1) })
	}
	if got := ran.Load(); got != n+3 {
		t.Fatalf("%d passes ran, want %d", got, n+3)
	}
	r.stop()
}
