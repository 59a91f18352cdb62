package reactor

import (
	"sync"
	"time"
)

// runners run the passes of a processor's objects. A pass grows a deep stack
// (JSON, diffs, the API client), and growing it costs CPU every time: a
// goroutine per pass spent several percent of the operator's CPU copying
// stacks in a burst of new objects. Runners outlive their passes, so a
// stack is grown once per runner; they exit after a short idleness, so that
// the grown stacks do not stay with thousands of idle objects (the reason a
// pass does not run on its object's long-lived worker).
type runners struct {
	jobs chan func()
	quit chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// runnerIdle is how long a runner waits for another pass before it exits.
// It is no behaviour anyone can observe, only a trade of memory for CPU, so
// it is real time rather than the operator's injected clock.
const runnerIdle = 2 * time.Second

func newRunners() *runners {
	return &runners{jobs: make(chan func()), quit: make(chan struct{})}
}

// run runs f on an idle runner, or on a new one if none is idle, and
// returns when f has returned.
func (r *runners) run(f func()) {
	done := make(chan struct{})
	job := func() {
		defer close(done)
		f()
	}
	select {
	case r.jobs <- job:
	default:
		r.wg.Go(func() { r.loop(job) })
	}
	<-done
}

func (r *runners) loop(job func()) {
	idle := time.NewTimer(runnerIdle)
	defer idle.Stop()
	for {
		job()
		idle.Reset(runnerIdle)
		select {
		case job = <-r.jobs:
		case <-idle.C:
			return
		case <-r.quit:
			return
		}
	}
}

// stop ends the idle runners and waits for all of them; callers make sure
// that no pass is running or will be submitted.
func (r *runners) stop() {
	r.once.Do(func() { close(r.quit) })
	r.wg.Wait()
}
