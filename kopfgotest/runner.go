package kopfgotest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/internal/testlog"
)

// Timeouts of the runner, long enough for a loaded CI machine: constants,
// as a variable changed by one test would race with the parallel others.
const (
	// readyTimeout bounds the wait for the operator to be ready in Run.
	readyTimeout = 2 * time.Minute
	// stopTimeout bounds the wait for the operator to return once stopped.
	stopTimeout = time.Minute
	// waitTimeout bounds Runner.WaitFor and Eventually.
	waitTimeout = time.Minute
)

// Runner is an operator running in the test's process (see Run).
type Runner struct {
	t      testing.TB
	log    testlog.Buffer
	cancel context.CancelFunc
	done   chan struct{}
	err    error

	mu      sync.Mutex
	changed chan struct{} // closed and replaced at each write to the log
	stop    sync.Once
}

// Run runs op in the test's process as `kopfgo run ARGS...` would (e.g.
// "-n", ns, "--verbose"; "--log-format=plain" by default), against the
// cluster of KUBECONFIG (Main's), with its log collected; it returns once
// the operator is ready (Operator.Ready), and fails the test if it stops
// before. Under Main, it starts Main's cluster if no test has yet. The operator stops when the test ends, and a failed test shows
// its log. Pass kopfgo.Default() for the operator that kopfgo.On registers
// on, or one made with kopfgo.New; an operator runs once at a time.
func Run(t testing.TB, op *kopfgo.Operator, args ...string) *Runner {
	t.Helper()
	if mainCalled.Load() {
		Cluster(t) // KUBECONFIG points to it once it runs
	}
	if !hasFlag(args, "--log-format") {
		args = append([]string{"--log-format=plain"}, args...)
	}
	r := &Runner{t: t, done: make(chan struct{}), changed: make(chan struct{})}
	r.log.OnWrite = r.notify
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer close(r.done)
		r.err = kopfgo.RunWithArgs(ctx, op, &r.log, args...)
	}()
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Errorf("the operator exited with an error: %v", err)
		}
		if t.Failed() {
			t.Logf("operator log:\n%s", r.Output())
		}
	})

	deadline := time.NewTimer(readyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond) // readiness has no signal to wait on
	defer tick.Stop()
	for {
		ready, why := op.Ready()
		if ready {
			return r
		}
		select {
		case <-r.done:
			t.Fatalf("the operator stopped before it was ready: %v\n%s", r.err, r.Output())
		case <-deadline.C:
			t.Fatalf("the operator is not ready after %s: %s", readyTimeout, why)
		case <-tick.C:
		}
	}
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

func (r *Runner) notify() {
	r.mu.Lock()
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// Stop stops the operator (as a SIGTERM would) and returns its exit error:
// nil after a clean stop. It is called when the test ends; calling it
// earlier lets a test check what the operator did on its way out.
func (r *Runner) Stop() error {
	r.stop.Do(func() {
		r.cancel()
		select {
		case <-r.done:
		case <-time.After(stopTimeout):
			r.err = fmt.Errorf("the operator did not stop within %s", stopTimeout)
		}
	})
	return r.Err()
}

// Err is the operator's exit error: nil while it runs or after a clean stop.
func (r *Runner) Err() error {
	select {
	case <-r.done:
		return r.err
	default:
		return nil
	}
}

// Output is the operator's log so far.
func (r *Runner) Output() string { return r.log.String() }

// lines are the operator's log lines so far.
func (r *Runner) lines() []string {
	return strings.Split(strings.TrimSuffix(r.log.String(), "\n"), "\n")
}

// Count is how many log lines contain substr.
func (r *Runner) Count(substr string) int {
	n := 0
	for _, l := range r.lines() {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

// WaitFor waits until n log lines contain substr, and fails the test after
// a minute or when the operator stops first.
func (r *Runner) WaitFor(substr string, n int) {
	r.t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		changed := r.changed
		r.mu.Unlock()
		if r.Count(substr) >= n {
			return
		}
		select {
		case <-changed:
		case <-r.done:
			if r.Count(substr) >= n {
				return
			}
			r.t.Fatalf("the operator stopped (%v) before logging %q %d times", r.err, substr, n)
		case <-deadline.C:
			r.t.Fatalf("%q logged %d times in %s, want %d", substr, r.Count(substr), waitTimeout, n)
		}
	}
}

// Eventually polls cond until it is true, and fails the test when it
// returns an error or a minute passes: for a state of the cluster, which
// has no event to wait on from a test (the operator's patch lands after its
// log line).
func Eventually(t testing.TB, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		switch {
		case err != nil:
			t.Fatalf("waiting for %s: %v", what, err)
		case ok:
			return
		}
		select {
		case <-deadline.C:
			t.Fatalf("no %s after %s", what, waitTimeout)
		case <-tick.C:
		}
	}
}
