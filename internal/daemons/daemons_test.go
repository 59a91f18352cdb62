package daemons

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/testlog"
	"github.com/kopfgo/kopfgo/patch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// rig is one object with its daemons, over a fake clock: the object's body
// takes the daemons' patches as the API server would, and the test steps
// the clock once the goroutines wait on it.
type rig struct {
	t     *testing.T
	clock *testingclock.FakeClock
	m     *Manager
	set   *Set
	logs  *testlog.Buffer

	mu      sync.Mutex
	body    map[string]any
	patches []string
	wakes   int
}

func newRig(t *testing.T, bg config.Background) *rig {
	r := &rig{
		t:     t,
		clock: testingclock.NewFakeClock(t0),
		logs:  &testlog.Buffer{},
		body: map[string]any{
			"metadata": map[string]any{"name": "kex", "namespace": "default", "uid": "u1"},
			"spec":     map[string]any{"field": "value"},
		},
	}
	r.m = NewManager(context.Background(), Config{
		Clock: r.clock, DefaultBackoff: 60 * time.Second,
		Background: config.Settings{Background: bg}.WithDefaults().Background,
	})
	r.set = r.m.NewSet(Object{
		Logger: slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Memo:   &handlers.Memo{},
		Live: func() (map[string]any, bool) {
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.body, true
		},
		Apply: func(ctx context.Context, p *patch.Patch) error {
			raw, _ := p.MarshalJSON()
			r.mu.Lock()
			defer r.mu.Unlock()
			r.body = p.Apply(r.body)
			r.patches = append(r.patches, string(raw))
			return nil
		},
		Wake: func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.wakes++
		},
	})
	t.Cleanup(r.m.Shutdown)
	return r
}

func (r *rig) status(key string) any {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, _ := r.body["status"].(map[string]any)
	return st[key]
}

func (r *rig) wakeCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wakes
}

// until spins (without sleeping) until cond holds: the goroutines under test
// only need the scheduler, never real time.
func (r *rig) until(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s\nlog:\n%s", what, r.logs)
		}
		runtime.Gosched()
	}
}

// step moves the clock once n goroutines wait on it.
func (r *rig) step(n int, d time.Duration) {
	r.t.Helper()
	r.until(fmt.Sprintf("%d clock waiters", n), func() bool { return r.clock.Waiters() >= n })
	r.clock.Step(d)
}

// calls records each invocation as the handler saw it, and lets the test
// decide what each invocation returns.
type calls struct {
	mu   sync.Mutex
	seen []call
}

type call struct {
	at      time.Duration // since t0, on the fake clock
	retry   int
	started time.Duration
	end     time.Duration
}

func (c *calls) add(cl call) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, cl)
	return len(c.seen)
}

func (c *calls) finish(end time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[len(c.seen)-1].end = end
}

func (c *calls) all() []call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]call(nil), c.seen...)
}

func (c *calls) n() int { return len(c.all()) }

func spawning(kind handling.SpawnKind, id string, fn handlers.SpawnFunc, opts ...func(*Spawning)) *handling.Spawning {
	s := &handling.Spawning{Kind: kind, Fn: fn}
	s.ID = id
	for _, o := range opts {
		o(s)
	}
	return s
}

// Spawning is an alias to keep the option helpers short.
type Spawning = handling.Spawning

func (r *rig) since() time.Duration { return r.clock.Now().Sub(t0) }

// (compat: daemons-errors, daemons-patch): a TemporaryError restarts the daemon
// after its delay with the next retry number, and each attempt's patch is
// applied; the daemon then runs until it is stopped, sees the stop reason in
// its Stopped flag and its ctx, and its exit wakes the object.
func TestDaemonRestartsAfterTemporaryErrorsAndStopsOnRequest(t *testing.T) {
	r := newRig(t, config.Background{})
	var c calls
	causes := make(chan error, 1)
	h := spawning(handling.KindDaemon, "monitor", func(ctx context.Context, s *handlers.Spawn) (any, error) {
		c.add(call{at: r.since(), retry: s.Retry, started: s.Started.Sub(t0)})
		if s.Retry < 3 {
			s.Patch.Status()["message"] = fmt.Sprintf("Failed %d times.", s.Retry+1)
			return nil, &handlers.TemporaryError{Err: errors.New("simulated"), Delay: time.Second}
		}
		for s.Sleep(ctx, 5*time.Second) {
		}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		if s.StopReason() != handlers.ErrResourceDeleted {
			t.Errorf("StopReason = %v, want ErrResourceDeleted", s.StopReason())
		}
		return nil, ctx.Err() // reporting the stop is no failure
	})
	r.set.Sync([]*handling.Spawning{h})
	for i := 0; i < 3; i++ {
		r.step(1, time.Second)
	}
	r.until("the 4th attempt", func() bool { return c.n() == 4 })
	for i, cl := range c.all() {
		if cl.retry != i || cl.at != time.Duration(i)*time.Second || cl.started != 0 {
			t.Errorf("attempt %d: %+v, want retry %d at %ds, started at 0", i, cl, i, i)
		}
	}
	if got := r.status("message"); got != "Failed 3 times." {
		t.Errorf("status.message = %v, want the 3rd attempt's patch", got)
	}
	if !r.set.Holding() || !r.set.Requires([]*handling.Spawning{h}) {
		t.Fatal("a running daemon must hold its object and require the finalizer")
	}

	r.step(1, 2*time.Second) // in the middle of the daemon's sleep
	r.set.Stop(handlers.ErrResourceDeleted)
	if cause := <-causes; cause != handlers.ErrResourceDeleted {
		t.Errorf("context.Cause = %v, want ErrResourceDeleted", cause)
	}
	r.until("the daemon's exit", func() bool { return !r.set.Holding() })
	r.until("the wake-up", func() bool { return r.wakeCount() == 1 })
	if n := r.logs.Count("Daemon 'monitor' failed temporarily: simulated"); n != 3 {
		t.Errorf("%d temporary failures logged, want 3", n)
	}
	if n := r.logs.Count("Daemon 'monitor' has exited on request"); n != 1 {
		t.Errorf("exit on request logged %d times, want 1:\n%s", n, r.logs)
	}
	if n := r.logs.Count("failed with an exception"); n != 0 {
		t.Errorf("the stop was reported as a failure:\n%s", r.logs)
	}
	if c.n() != 4 {
		t.Errorf("%d invocations, want 4", c.n())
	}
}

// (compat: daemons-errors, daemons-finalizer, daemons-results): a daemon that
// returns is done for good in this process: its result goes to status, it is
// not spawned again, and the object no longer needs the finalizer for it.
func TestDaemonThatReturnsIsNotRestarted(t *testing.T) {
	r := newRig(t, config.Background{})
	var c calls
	h := spawning(handling.KindDaemon, "once", func(ctx context.Context, s *handlers.Spawn) (any, error) {
		c.add(call{})
		return map[string]any{"finished": true}, nil
	})
	r.set.Sync([]*handling.Spawning{h})
	r.until("the exit", func() bool { return r.wakeCount() == 1 })
	for i := 0; i < 3; i++ {
		r.set.Sync([]*handling.Spawning{h})
	}
	if c.n() != 1 {
		t.Errorf("%d invocations, want 1: a returned daemon is not restarted", c.n())
	}
	if got, _ := r.status("once").(map[string]any); got["finished"] != true {
		t.Errorf("status.once = %v, want {finished: true}", r.status("once"))
	}
	if r.set.Requires([]*handling.Spawning{h}) {
		t.Error("a daemon done for good still requires the finalizer")
	}
	if n := r.logs.Count("Daemon 'once' has exited on its own"); n != 1 {
		t.Errorf("exit on its own logged %d times, want 1", n)
	}
}

// The errors modes apply to daemons as to any handler: arbitrary errors are
// retried after the backoff, or stop the daemon for good when permanent or
// ignored; Retries bound the attempts.
func TestDaemonErrorsModes(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name     string
		opt      func(*Spawning)
		steps    int // clock steps of 2s the test makes
		attempts int
		logged   string
	}{
		{"temporary after the backoff", func(s *Spawning) { s.Backoff = 2 * time.Second }, 2, 3,
			"Daemon 'd' failed with an exception and will try again in 2 seconds: boom"},
		{"permanent stops for good", func(s *Spawning) { s.Errors = handlers.ErrorsPermanent }, 0, 1,
			"Daemon 'd' failed with an exception and will stop now: boom"},
		{"ignored ends it as done", func(s *Spawning) { s.Errors = handlers.ErrorsIgnored }, 0, 1,
			"Daemon 'd' failed with an exception and will ignore it: boom"},
		{"retries are bounded", func(s *Spawning) { s.Backoff, s.Retries = 2*time.Second, 2 }, 1, 2,
			"Daemon 'd' failed with an exception and will stop now (it would exceed 2 retries on the next attempt): boom"},
		{"a permanent error", func(s *Spawning) {
			s.Fn = func(context.Context, *handlers.Spawn) (any, error) { return nil, &handlers.PermanentError{Err: boom} }
		}, 0, 1,
			"Daemon 'd' failed permanently: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, config.Background{})
			var c calls
			h := spawning(handling.KindDaemon, "d", nil, tc.opt)
			fn := h.Fn
			h.Fn = func(ctx context.Context, s *handlers.Spawn) (any, error) {
				c.add(call{retry: s.Retry})
				if fn != nil {
					return fn(ctx, s)
				}
				return nil, boom
			}
			r.set.Sync([]*handling.Spawning{h})
			for i := 0; i < tc.steps; i++ {
				r.step(1, 2*time.Second)
			}
			if tc.attempts == tc.steps+1 && tc.name == "temporary after the backoff" {
				r.until("the last attempt", func() bool { return c.n() == tc.attempts })
				r.set.Stop(handlers.ErrResourceDeleted)
			}
			r.until("the exit", func() bool { return !r.set.Holding() })
			if c.n() != tc.attempts {
				t.Errorf("%d attempts, want %d", c.n(), tc.attempts)
			}
			if n := r.logs.Count(tc.logged); n < 1 {
				t.Errorf("no log line %q:\n%s", tc.logged, r.logs)
			}
		})
	}
}

// (compat: daemons-stopping): the stop stages. The Stopped flag is set at once;
// the ctx is cancelled only after the CancellationBackoff; a daemon still
// running after the CancellationTimeout is reported and abandoned: it no longer
// holds the object, but it is not spawned again while its goroutine runs.
func TestUncooperativeDaemonIsAbandonedAfterItsTimeout(t *testing.T) {
	r := newRig(t, config.Background{})
	release := make(chan struct{})
	var started calls
	var ctxRef context.Context
	var mu sync.Mutex
	h := spawning(handling.KindDaemon, "stubborn", func(ctx context.Context, s *handlers.Spawn) (any, error) {
		mu.Lock()
		ctxRef = ctx
		mu.Unlock()
		started.add(call{})
		<-release // ignores the flag and the ctx alike
		return nil, nil
	}, func(s *Spawning) { s.CancellationBackoff, s.CancellationTimeout = time.Second, 2*time.Second })
	r.set.Sync([]*handling.Spawning{h})
	r.until("the start", func() bool { return started.n() == 1 })
	mu.Lock()
	ctx := ctxRef
	mu.Unlock()

	r.set.Stop(handlers.ErrResourceDeleted)
	if ctx.Err() != nil {
		t.Fatal("ctx cancelled before the cancellation backoff")
	}
	r.step(1, time.Second)
	r.until("the ctx cancellation", func() bool { return ctx.Err() != nil })
	if cause := context.Cause(ctx); cause != handlers.ErrResourceDeleted {
		t.Errorf("context.Cause = %v, want ErrResourceDeleted", cause)
	}
	if !r.set.Holding() {
		t.Fatal("released before the cancellation timeout")
	}
	r.step(1, 2*time.Second)
	r.until("the abandonment", func() bool { return !r.set.Holding() })
	if n := r.logs.Count("Daemon 'stubborn' did not exit in time. Leaving it orphaned."); n != 1 {
		t.Errorf("abandonment logged %d times, want 1:\n%s", n, r.logs)
	}
	r.until("the abandonment's wake-up", func() bool { return r.wakeCount() == 1 })
	r.set.Sync([]*handling.Spawning{h})
	if started.n() != 1 {
		t.Error("an orphaned daemon was spawned a second time while it still runs")
	}
	close(release)
	r.until("the orphan's exit", func() bool { return r.wakeCount() == 2 })
}

// (compat: daemons-stopping) stage 3b: without a CancellationTimeout, a daemon
// that does not exit keeps holding its object, checked every
// CancellationPolling.
func TestDaemonWithoutTimeoutIsPolled(t *testing.T) {
	r := newRig(t, config.Background{CancellationPolling: 10 * time.Second})
	release := make(chan struct{})
	var c calls
	h := spawning(handling.KindDaemon, "slow", func(ctx context.Context, s *handlers.Spawn) (any, error) {
		c.add(call{})
		<-release
		return nil, nil
	})
	r.set.Sync([]*handling.Spawning{h})
	r.until("the start", func() bool { return c.n() == 1 })
	r.set.Stop(handlers.ErrResourceDeleted)
	for i := 0; i < 3; i++ {
		r.step(1, 10*time.Second)
	}
	r.until("3 polls", func() bool {
		return r.logs.Count("Daemon 'slow' is still exiting. The next check is in 10 seconds.") == 3
	})
	if !r.set.Holding() {
		t.Error("a daemon without a timeout stopped holding its object")
	}
	close(release)
	r.until("the exit", func() bool { return !r.set.Holding() })
}

// (compat: daemons-filters): a daemon whose object stops matching is stopped with
// ErrFiltersMismatch and, unlike one that returned on its own, is spawned
// again when the object matches again.
func TestFiltersMismatchStopsAndRematchRespawns(t *testing.T) {
	r := newRig(t, config.Background{})
	var c calls
	reasons := make(chan error, 2)
	h := spawning(handling.KindDaemon, "filtered", func(ctx context.Context, s *handlers.Spawn) (any, error) {
		c.add(call{})
		<-s.Stopping()
		reasons <- s.StopReason()
		return nil, nil
	})
	r.set.Sync([]*handling.Spawning{h})
	r.until("the start", func() bool { return c.n() == 1 })
	r.set.Sync(nil)
	if got := <-reasons; got != handlers.ErrFiltersMismatch {
		t.Errorf("StopReason = %v, want ErrFiltersMismatch", got)
	}
	r.until("the exit", func() bool { return r.wakeCount() == 1 })
	if r.set.Requires([]*handling.Spawning{h}) != true {
		t.Error("a filtered-out daemon must be spawnable again, so it still counts for the finalizer when matching")
	}
	r.set.Sync([]*handling.Spawning{h})
	r.until("the respawn", func() bool { return c.n() == 2 })
	r.set.Stop(handlers.ErrResourceDeleted)
	<-reasons
	r.until("the exit", func() bool { return !r.set.Holding() })
}

// (compat: daemons-live): Live gives the latest body while the invocation's
// Object stays as it was when the invocation started; ApplyPatch sends the
// patch mid-run.
func TestLiveViewAndPatchWhileRunning(t *testing.T) {
	r := newRig(t, config.Background{})
	seen := make(chan [2]any)
	h := spawning(handling.KindDaemon, "watcher", func(ctx context.Context, s *handlers.Spawn) (any, error) {
		s.Patch.Status()["phase"] = "watching"
		if err := s.ApplyPatch(ctx); err != nil {
			t.Errorf("ApplyPatch: %v", err)
		}
		seen <- [2]any{s.Spec["field"], s.Live().Spec["field"]}
		<-s.Stopping()
		seen <- [2]any{s.Spec["field"], s.Live().Spec["field"]}
		return nil, nil
	})
	r.set.Sync([]*handling.Spawning{h})
	if got := <-seen; got != [2]any{"value", "value"} {
		t.Errorf("at start: Spec.field, Live().Spec.field = %v", got)
	}
	if got := r.status("phase"); got != "watching" {
		t.Errorf("status.phase = %v, want the patch applied while the daemon runs", got)
	}
	r.mu.Lock()
	r.body = patchOf(map[string]any{"spec": map[string]any{"field": "changed"}}).Apply(r.body)
	r.mu.Unlock()
	r.set.Stop(handlers.ErrResourceDeleted)
	if got := <-seen; got != [2]any{"value", "changed"} {
		t.Errorf("after a change: Spec.field, Live().Spec.field = %v, want the frozen and the live value", got)
	}
	r.until("the exit", func() bool { return !r.set.Holding() })
}

func patchOf(m map[string]any) *patch.Patch {
	p := &patch.Patch{}
	for k, v := range m {
		p.Map()[k] = v
	}
	return p
}

// (compat: daemons-initial-delay): the initial delay postpones the first
// invocation, and a stop during it ends the daemon without any invocation.
func TestInitialDelay(t *testing.T) {
	r := newRig(t, config.Background{})
	var c calls
	h := spawning(handling.KindDaemon, "late", func(ctx context.Context, s *handlers.Spawn) (any, error) {
		c.add(call{at: r.since()})
		return nil, nil
	}, func(s *Spawning) {
		s.InitialDelayFunc = func(s *handlers.Spawn) time.Duration {
			if s.Spec["field"] != "value" {
				t.Errorf("InitialDelayFunc sees spec %v", s.Spec)
			}
			return 5 * time.Second
		}
	})
	r.set.Sync([]*handling.Spawning{h})
	r.step(1, 4*time.Second)
	r.step(1, time.Second)
	r.until("the invocation", func() bool { return c.n() == 1 })
	if at := c.all()[0].at; at != 5*time.Second {
		t.Errorf("first invocation at %v, want 5s", at)
	}

	h2 := spawning(handling.KindDaemon, "never", func(ctx context.Context, s *handlers.Spawn) (any, error) {
		t.Error("invoked although stopped during its initial delay")
		return nil, nil
	}, func(s *Spawning) { s.InitialDelay = time.Minute })
	r.set.Sync([]*handling.Spawning{h2})
	r.step(1, time.Second)
	r.set.Stop(handlers.ErrResourceDeleted)
	r.until("the exit", func() bool { return !r.set.Holding() })
}

// (compat: timers-interval, timers-sharp): a regular timer sleeps the interval
// after each invocation ends; a sharp one keeps the grid from the invocation's
// start. Handlers "take" 0.3s by stepping the clock themselves.
func TestTimerIntervalAndSharp(t *testing.T) {
	for _, tc := range []struct {
		sharp bool
		want  []time.Duration
	}{
		{false, []time.Duration{0, 1300 * time.Millisecond, 2600 * time.Millisecond, 3900 * time.Millisecond}},
		{true, []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second}},
	} {
		t.Run(fmt.Sprintf("sharp=%v", tc.sharp), func(t *testing.T) {
			r := newRig(t, config.Background{})
			var c calls
			h := spawning(handling.KindTimer, "tick", func(ctx context.Context, s *handlers.Spawn) (any, error) {
				c.add(call{at: r.since(), retry: s.Retry})
				r.clock.Step(300 * time.Millisecond)
				return nil, nil
			}, func(s *Spawning) { s.Interval, s.Sharp = time.Second, tc.sharp })
			r.set.Sync([]*handling.Spawning{h})
			for i := 1; i < len(tc.want); i++ {
				r.until(fmt.Sprintf("invocation %d's sleep", i), func() bool { return c.n() == i && r.clock.Waiters() == 1 })
				r.clock.Step(tc.want[i] - r.since())
			}
			r.until("the last invocation", func() bool { return c.n() == len(tc.want) })
			for i, cl := range c.all() {
				if cl.at != tc.want[i] || cl.retry != 0 {
					t.Errorf("invocation %d at %v (retry %d), want at %v", i, cl.at, cl.retry, tc.want[i])
				}
			}
			r.set.Stop(handlers.ErrResourceDeleted)
			r.until("the exit", func() bool { return !r.set.Holding() })
		})
	}
}

// (compat: timers-errors): errors override the schedule and the retries count
// afresh after a success: with interval 4s and backoff 1s, a timer failing
// while retry < 3 runs at 0, 1, 2, 3 (retries 0..3) and then at 7 with retry 0.
func TestTimerErrorsOverrideTheSchedule(t *testing.T) {
	r := newRig(t, config.Background{})
	var c calls
	h := spawning(handling.KindTimer, "flaky", func(ctx context.Context, s *handlers.Spawn) (any, error) {
		n := c.add(call{at: r.since(), retry: s.Retry})
		if s.Retry < 3 && n <= 4 {
			return nil, errors.New("not yet")
		}
		return nil, nil
	}, func(s *Spawning) { s.Interval, s.Backoff = 4*time.Second, time.Second })
	r.set.Sync([]*handling.Spawning{h})
	for _, d := range []time.Duration{1, 1, 1, 4} {
		r.step(1, d*time.Second)
	}
	r.until("5 invocations", func() bool { return c.n() == 5 })
	want := []call{{at: 0, retry: 0}, {at: time.Second, retry: 1}, {at: 2 * time.Second, retry: 2}, {at: 3 * time.Second, retry: 3}, {at: 7 * time.Second, retry: 0}}
	for i, cl := range c.all() {
		if cl.at != want[i].at || cl.retry != want[i].retry {
			t.Errorf("invocation %d: at %v retry %d; want at %v retry %d", i, cl.at, cl.retry, want[i].at, want[i].retry)
		}
	}
	r.set.Stop(handlers.ErrResourceDeleted)
	r.until("the exit", func() bool { return !r.set.Holding() })
}

// The manual (compat: timers-errors): a permanent error stops a timer for good.
func TestTimerStopsForGoodOnPermanentError(t *testing.T) {
	r := newRig(t, config.Background{})
	var c calls
	h := spawning(handling.KindTimer, "doomed", func(ctx context.Context, s *handlers.Spawn) (any, error) {
		c.add(call{})
		return nil, &handlers.PermanentError{Err: errors.New("no way")}
	}, func(s *Spawning) { s.Interval = time.Second })
	r.set.Sync([]*handling.Spawning{h})
	r.until("the exit", func() bool { return r.wakeCount() == 1 })
	r.set.Sync([]*handling.Spawning{h})
	if c.n() != 1 || r.set.Requires([]*handling.Spawning{h}) {
		t.Errorf("%d invocations, requires=%v; want 1 and false", c.n(), r.set.Requires([]*handling.Spawning{h}))
	}
}

// (compat: timers-idle, timers-combined): an idle timer fires only after the
// object has been unchanged for the idle time, each change postponing it; then
// it repeats on its interval while nothing changes.
func TestTimerIdle(t *testing.T) {
	r := newRig(t, config.Background{})
	var c calls
	h := spawning(handling.KindTimer, "quiet", func(ctx context.Context, s *handlers.Spawn) (any, error) {
		c.add(call{at: r.since()})
		return nil, nil
	}, func(s *Spawning) { s.Idle, s.Interval = 3*time.Second, time.Second })
	r.set.Sync([]*handling.Spawning{h})
	r.step(1, 2*time.Second)
	r.set.Changed(r.clock.Now()) // at 2s: postpones the first call to 5s
	r.step(1, time.Second)       // the 3s sleep ends; 2s of idling left
	r.step(1, 2*time.Second)
	r.until("the first call", func() bool { return c.n() == 1 })
	r.step(1, time.Second)
	r.until("the second call", func() bool { return c.n() == 2 })
	if got := c.all(); got[0].at != 5*time.Second || got[1].at != 6*time.Second {
		t.Errorf("calls at %v and %v, want 5s and 6s", got[0].at, got[1].at)
	}
	r.set.Stop(handlers.ErrResourceDeleted)
	r.until("the exit", func() bool { return !r.set.Holding() })
}

// An idle-only timer fires once per quiet period: after a call, it waits for
// the next change, then idles again.
func TestIdleOnlyTimerFiresOncePerQuietPeriod(t *testing.T) {
	r := newRig(t, config.Background{})
	var c calls
	h := spawning(handling.KindTimer, "settled", func(ctx context.Context, s *handlers.Spawn) (any, error) {
		c.add(call{at: r.since()})
		return nil, nil
	}, func(s *Spawning) { s.Idle = 2 * time.Second })
	r.set.Sync([]*handling.Spawning{h})
	r.step(1, 2*time.Second)
	r.until("the first call", func() bool { return c.n() == 1 })
	for i := 0; i < 3; i++ {
		r.step(1, 2*time.Second) // quiet: polls, no call
	}
	r.set.Changed(r.clock.Now()) // at 8s
	r.step(1, 2*time.Second)     // the poll sees the change; idling until 10s
	r.until("the second call", func() bool { return c.n() == 2 })
	if got := c.all(); got[0].at != 2*time.Second || got[1].at != 10*time.Second {
		t.Errorf("calls at %v and %v, want 2s and 10s", got[0].at, got[1].at)
	}
	r.set.Stop(handlers.ErrResourceDeleted)
	r.until("the exit", func() bool { return !r.set.Holding() })
}

// (compat: timers-overlap): a timer never overlaps itself, even when its
// handler takes longer than the interval.
func TestTimerNeverOverlapsItself(t *testing.T) {
	r := newRig(t, config.Background{})
	var c calls
	var running, worst int
	var mu sync.Mutex
	h := spawning(handling.KindTimer, "slow", func(ctx context.Context, s *handlers.Spawn) (any, error) {
		mu.Lock()
		running++
		worst = max(worst, running)
		mu.Unlock()
		c.add(call{at: r.since()})
		r.clock.Step(time.Second) // ten intervals long
		c.finish(r.since())
		mu.Lock()
		running--
		mu.Unlock()
		return nil, nil
	}, func(s *Spawning) { s.Interval, s.Sharp = 100*time.Millisecond, true })
	r.set.Sync([]*handling.Spawning{h})
	for i := 0; i < 5; i++ {
		r.step(1, 100*time.Millisecond)
	}
	r.until("6 calls", func() bool { return c.n() >= 6 })
	r.set.Stop(handlers.ErrResourceDeleted)
	r.until("the exit", func() bool { return !r.set.Holding() })
	all := c.all()
	for i := 1; i < len(all); i++ {
		if all[i].at < all[i-1].end {
			t.Errorf("call %d started at %v before call %d ended at %v", i, all[i].at, i-1, all[i-1].end)
		}
	}
	if worst != 1 {
		t.Errorf("%d concurrent invocations, want 1", worst)
	}
}

// (compat: daemons-exit): the operator's exit stops every daemon with
// ErrOperatorExiting; a cooperative one exits at once and Shutdown returns
// without the clock moving.
func TestShutdownStopsCooperativeDaemonsAtOnce(t *testing.T) {
	r := newRig(t, config.Background{})
	var c calls
	reasons := make(chan error, 2)
	fn := func(ctx context.Context, s *handlers.Spawn) (any, error) {
		c.add(call{})
		<-ctx.Done()
		reasons <- context.Cause(ctx)
		return nil, ctx.Err()
	}
	a := spawning(handling.KindDaemon, "a", fn)
	b := spawning(handling.KindTimer, "b", fn, func(s *Spawning) { s.Interval = time.Second })
	r.set.Sync([]*handling.Spawning{a, b})
	r.until("2 invocations", func() bool { return c.n() == 2 })
	r.m.Shutdown()
	for i := 0; i < 2; i++ {
		if got := <-reasons; got != handlers.ErrOperatorExiting {
			t.Errorf("context.Cause = %v, want ErrOperatorExiting", got)
		}
	}
	if r.m.Running() != 0 || r.logs.Count("did not exit in time") != 0 {
		t.Errorf("running=%d after Shutdown:\n%s", r.m.Running(), r.logs)
	}
}

// (compat: daemons-exit): daemons that ignore the stop do not hang the exit: one with a
// CancellationTimeout is abandoned after it, one without after
// Background.ExitTimeout; Shutdown returns then, and no daemon is spawned
// after it has begun.
func TestShutdownIsBoundedByTheTimeouts(t *testing.T) {
	r := newRig(t, config.Background{ExitTimeout: 5 * time.Second})
	release := make(chan struct{})
	var c calls
	stubborn := func(ctx context.Context, s *handlers.Spawn) (any, error) {
		c.add(call{})
		<-release
		return nil, nil
	}
	bounded := spawning(handling.KindDaemon, "bounded", stubborn, func(s *Spawning) { s.CancellationTimeout = 2 * time.Second })
	unbounded := spawning(handling.KindDaemon, "unbounded", stubborn)
	r.set.Sync([]*handling.Spawning{bounded, unbounded})
	r.until("2 daemons", func() bool { return c.n() == 2 })

	done := make(chan struct{})
	go func() { r.m.Shutdown(); close(done) }()
	abandoned := func(id string) bool {
		return r.logs.Count(fmt.Sprintf("Daemon '%s' did not exit in time. Leaving it orphaned.", id)) == 1
	}
	r.step(2, 2*time.Second) // the bounded one's timeout, and 2s of the exit timeout
	r.until("the bounded one's abandonment", func() bool { return abandoned("bounded") })
	select {
	case <-done:
		t.Fatal("Shutdown returned before the exit timeout of the unbounded daemon")
	default:
	}
	r.step(1, 3*time.Second)
	<-done
	if !abandoned("unbounded") {
		t.Errorf("the unbounded daemon's abandonment is not logged:\n%s", r.logs)
	}
	r.set.Sync([]*handling.Spawning{spawning(handling.KindDaemon, "late", stubborn)})
	if r.m.Running() != 0 || c.n() != 2 {
		t.Error("a daemon was spawned after the shutdown began")
	}
	close(release)
	r.until("the orphans' exit", func() bool { return r.wakeCount() == 4 })
}
