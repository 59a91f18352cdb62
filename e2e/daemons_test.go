//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/cluster"
	"github.com/kopfgo/kopfgo/internal/logging"
)

// opRun is an embedded operator that a test stops (and restarts) itself.
type opRun struct {
	log    *logSink
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

func startOperator(t *testing.T, ns string, settings kopfgo.Settings, register func(op *kopfgo.Operator)) *opRun {
	t.Helper()
	return startOperatorWith(t, kopfgo.Options{Namespaces: []string{ns}, Settings: settings}, register)
}

// startOperatorWith is startOperator with more options: the shared
// cluster's config and a logger into the run's log are added to them.
func startOperatorWith(t *testing.T, opts kopfgo.Options, register func(op *kopfgo.Operator)) *opRun {
	t.Helper()
	r := &opRun{log: &logSink{}, done: make(chan error, 1)}
	opts.RESTConfig = cluster.Shared(t).RESTConfig()
	opts.Logger = logging.New(logging.Config{Format: logging.FormatPlain, Level: slog.LevelDebug, Writer: r.log})
	op := kopfgo.New(opts)
	register(op)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- op.Run(ctx) }()
	t.Cleanup(func() {
		r.stop(t)
		if t.Failed() {
			t.Logf("operator log:\n%s", r.log)
		}
	})
	return r
}

// stop ends the operator and returns how long Run took to return; Run must
// return, and without an error.
func (r *opRun) stop(t *testing.T) time.Duration {
	t.Helper()
	var took time.Duration
	r.once.Do(func() {
		begin := time.Now()
		r.cancel()
		select {
		case err := <-r.done:
			took = time.Since(begin)
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(waitShort):
			t.Errorf("Run did not return within %s after its context ended", waitShort)
		}
	})
	return took
}

func kexNamed(t *testing.T, name string) map[string]any {
	t.Helper()
	obj := objYAML(t)
	obj["metadata"].(map[string]any)["name"] = name
	return obj
}

// journal records what daemons saw, per object, safely across goroutines.
type journal struct {
	mu      sync.Mutex
	entries map[string]*entry
}

type entry struct {
	starts, running, maxRunning   int
	firstStart                    time.Time
	retries                       []int
	field                         any
	causes                        []error
	existedAtExit, deletingAtExit bool
}

func (j *journal) with(name string, f func(e *entry)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.entries == nil {
		j.entries = map[string]*entry{}
	}
	e := j.entries[name]
	if e == nil {
		e = &entry{}
		j.entries[name] = e
	}
	f(e)
}

func (j *journal) get(name string) entry {
	var out entry
	j.with(name, func(e *entry) {
		out = *e
		out.retries = append([]int(nil), e.retries...)
		out.causes = append([]error(nil), e.causes...)
	})
	return out
}

// start and exit bracket one daemon run, counting overlapping runs.
func (j *journal) start(name string) {
	j.with(name, func(e *entry) {
		e.starts++
		e.running++
		e.maxRunning = max(e.maxRunning, e.running)
		if e.firstStart.IsZero() {
			e.firstStart = time.Now()
		}
	})
}

func (j *journal) exit(name string, cause error) {
	j.with(name, func(e *entry) {
		e.running--
		e.causes = append(e.causes, cause)
	})
}

// (compat: daemons-spawn, daemons-stopped, daemons-finalizer, daemons-live, daemons-results, daemons-patch): daemons start for the
// objects found at startup and for new ones; they see the live object and
// patch it while they run; deleting an object stops its daemon with
// ErrResourceDeleted, and the object goes only after the daemon has exited.
func TestDaemonsAccompanyObjectsUntilDeleted(t *testing.T) {
	ns := namespace(t)
	client := dyn(t)
	for i := 1; i <= 3; i++ {
		createKex(t, ns, kexNamed(t, fmt.Sprintf("pre-%d", i)))
	}
	var j journal
	monitor := func(ctx context.Context, d *kopfgo.Spawn) (any, error) {
		j.start(d.Name)
		d.Patch.Status()["phase"] = "running"
		if err := d.ApplyPatch(ctx); err != nil {
			return nil, err
		}
		for d.Sleep(ctx, 100*time.Millisecond) {
			field := d.Live().Spec["field"]
			j.with(d.Name, func(e *entry) { e.field = field })
		}
		u, err := client.Resource(kexGVR).Namespace(ns).Get(context.Background(), d.Name, metav1.GetOptions{})
		j.with(d.Name, func(e *entry) {
			e.existedAtExit = err == nil
			e.deletingAtExit = err == nil && u.GetDeletionTimestamp() != nil
		})
		j.exit(d.Name, context.Cause(ctx))
		return nil, nil
	}
	begin := time.Now()
	op := startOperator(t, ns, kopfgo.Settings{}, func(op *kopfgo.Operator) {
		op.On.Daemon("kopfexamples", monitor, kopfgo.ID("monitor"))
	})
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("pre-%d", i)
		eventually(t, waitShort, "the daemon of "+name, func() (bool, error) { return j.get(name).starts == 1, nil })
		t.Logf("the daemon of %s started %v after the operator", name, j.get(name).firstStart.Sub(begin).Round(time.Millisecond))
	}
	createKex(t, ns, kexNamed(t, "new-1"))
	eventually(t, waitShort, "the daemon of a new object", func() (bool, error) { return j.get("new-1").starts == 1, nil })

	// The patch is applied while the daemon runs, and it sees changes live.
	waitKex(t, ns, "new-1", "status.phase from the running daemon, and the finalizer", func(u *unstructured.Unstructured) bool {
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		return phase == "running" && len(u.GetFinalizers()) == 1
	})
	if e := j.get("new-1"); e.running != 1 {
		t.Fatalf("the daemon of new-1 is not running: %+v", e)
	}
	patchKex(t, ns, "pre-1", `{"spec":{"field":"changed"}}`)
	eventually(t, waitShort, "the daemon seeing the change", func() (bool, error) { return j.get("pre-1").field == "changed", nil })

	deleteKex(t, ns, "pre-1")
	waitGone(t, ns, "pre-1")
	e := j.get("pre-1")
	if len(e.causes) != 1 || e.causes[0] != kopfgo.ErrResourceDeleted {
		t.Errorf("the daemon's ctx causes = %v, want [ErrResourceDeleted]", e.causes)
	}
	if !e.existedAtExit || !e.deletingAtExit {
		t.Errorf("at the daemon's exit the object existed=%v deleting=%v; want it held for the daemon", e.existedAtExit, e.deletingAtExit)
	}
	for _, name := range []string{"pre-2", "pre-3", "new-1"} {
		if e := j.get(name); e.running != 1 || e.starts != 1 {
			t.Errorf("%s: running %d, started %d times; want its daemon running once", name, e.running, e.starts)
		}
	}
	if n := op.log.Count("Daemon 'monitor' has exited on request"); n != 1 {
		t.Errorf("%d exits logged, want 1", n)
	}
}

// (compat: daemons-stopping, daemons-exit): a daemon that ignores its stop is reported after its
// CancellationTimeout and its object is released; at the operator's exit,
// one without a timeout is reported after Background.ExitTimeout, and Run
// returns: an uncooperative daemon never hangs the shutdown.
func TestUncooperativeDaemonsAreReportedAndReleased(t *testing.T) {
	ns := namespace(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // after the operator's stop: the orphans end with the test
	var j journal
	stubborn := func(ctx context.Context, d *kopfgo.Spawn) (any, error) {
		j.start(d.Name)
		<-release // ignores the flag and the ctx
		return nil, nil
	}
	unbounded := func(ctx context.Context, d *kopfgo.Spawn) (any, error) {
		if d.Name != "b" {
			return nil, nil // done for good: it does not hold "a"
		}
		j.start("unbounded")
		<-release
		return nil, nil
	}
	var settings kopfgo.Settings
	settings.Background.ExitTimeout = 2 * time.Second
	op := startOperator(t, ns, settings,
		func(op *kopfgo.Operator) {
			op.On.Daemon("kopfexamples", stubborn, kopfgo.ID("stubborn"), kopfgo.CancellationTimeout(time.Second))
			op.On.Daemon("kopfexamples", unbounded, kopfgo.ID("unbounded"))
		})
	createKex(t, ns, kexNamed(t, "a"))
	createKex(t, ns, kexNamed(t, "b"))
	eventually(t, waitShort, "3 daemons", func() (bool, error) {
		return j.get("a").starts == 1 && j.get("b").starts == 1 && j.get("unbounded").starts == 1, nil
	})

	deleteKex(t, ns, "a")
	op.log.WaitFor(t, fmt.Sprintf("[%s/a] Daemon 'stubborn' did not exit in time. Leaving it orphaned.", ns), 1)
	waitGone(t, ns, "a")

	took := op.stop(t)
	t.Logf("the operator stopped in %v with 2 daemons ignoring the stop (exit timeout 2s)", took.Round(time.Millisecond))
	for _, line := range []string{
		fmt.Sprintf("[%s/b] Daemon 'stubborn' did not exit in time. Leaving it orphaned.", ns),
		fmt.Sprintf("[%s/b] Daemon 'unbounded' did not exit in time. Leaving it orphaned.", ns),
	} {
		if op.log.Count(line) != 1 {
			t.Errorf("not logged once: %q", line)
		}
	}
	if fin := getKex(t, ns, "b").GetFinalizers(); len(fin) != 1 {
		t.Errorf("finalizers of b = %v: the operator's exit must leave them for the next start", fin)
	}
}

// (compat: timers-interval): a timer with Interval(1s) fires about once per second for each of
// 20 objects. Counted over a window the test measures, in a wide band.
func TestTimerFiresAboutOncePerSecondPerObject(t *testing.T) {
	const objects = 20
	ns := namespace(t)
	var mu sync.Mutex
	counts := map[string]int{}
	snapshot := func() (map[string]int, int) {
		mu.Lock()
		defer mu.Unlock()
		out, total := map[string]int{}, 0
		for k, v := range counts {
			out[k], total = v, total+v
		}
		return out, total
	}
	startOperator(t, ns, kopfgo.Settings{}, func(op *kopfgo.Operator) {
		op.On.Timer("kopfexamples", func(ctx context.Context, tm *kopfgo.Spawn) (any, error) {
			mu.Lock()
			counts[tm.Name]++
			mu.Unlock()
			return nil, nil
		}, kopfgo.ID("tick"), kopfgo.Interval(time.Second))
	})
	for i := range objects {
		createKex(t, ns, kexNamed(t, fmt.Sprintf("tick-%02d", i)))
	}
	eventually(t, waitShort, "every timer firing", func() (bool, error) {
		c, _ := snapshot()
		return len(c) == objects, nil
	})
	before, total0 := snapshot()
	begin := time.Now()
	eventually(t, waitShort, "5 more ticks per object on average", func() (bool, error) {
		_, total := snapshot()
		return total >= total0+5*objects, nil
	})
	after, _ := snapshot()
	window := time.Since(begin).Seconds()
	lo, hi := 0.5*window-1, window+2
	for name, n := range after {
		if d := float64(n - before[name]); d < lo || d > hi {
			t.Errorf("%s fired %v times in %.1fs, want about once per second (%.1f..%.1f)", name, d, window, lo, hi)
		}
	}
	t.Logf("%d timers fired %d times in %.1fs", objects, 5*objects, window)
}

// (compat: timers-idle, timers-results): an idle timer does not fire while the object keeps
// changing, then fires on its interval; its own status results do not count
// as changes (or it would fire only once).
func TestIdleTimerWaitsForTheObjectToSettle(t *testing.T) {
	ns := namespace(t)
	var mu sync.Mutex
	fired := 0
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return fired
	}
	startOperator(t, ns, kopfgo.Settings{}, func(op *kopfgo.Operator) {
		op.On.Timer("kopfexamples", func(ctx context.Context, tm *kopfgo.Spawn) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			fired++
			return fired, nil // to status.quiet: a status write after each tick
		}, kopfgo.ID("quiet"), kopfgo.Idle(3*time.Second), kopfgo.Interval(500*time.Millisecond))
	})
	createKex(t, ns, kexNamed(t, "busy"))
	for i := range 10 {
		patchKex(t, ns, "busy", fmt.Sprintf(`{"spec":{"counter":%d}}`, i))
		time.Sleep(500 * time.Millisecond) // the changes the test makes: 5s of them, 0.5s apart
	}
	if n := count(); n != 0 {
		t.Fatalf("the idle timer fired %d times while the object kept changing", n)
	}
	eventually(t, waitShort, "3 ticks once the object settled", func() (bool, error) { return count() >= 3, nil })
	waitKex(t, ns, "busy", "the tick count in status", func(u *unstructured.Unstructured) bool {
		n, _, _ := unstructured.NestedInt64(u.Object, "status", "quiet")
		return n >= 3
	})
}

// (compat: daemons-errors, daemons-finalizer, daemons-results): a TemporaryError restarts a daemon after its
// delay with the next retry; a daemon that returns delivers its result, is
// not restarted, and no longer needs the finalizer, which goes without any
// deletion; an operator restart runs it again.
func TestDaemonRestartsOnTemporaryErrorsAndEndsWhenItReturns(t *testing.T) {
	ns := namespace(t)
	var j journal
	retrying := func(ctx context.Context, d *kopfgo.Spawn) (any, error) {
		j.with(d.Name, func(e *entry) { e.retries = append(e.retries, d.Retry) })
		if d.Retry < 3 {
			return nil, kopfgo.TemporaryMsg("not yet", time.Second)
		}
		return map[string]any{"finished": true}, nil
	}
	var cu caughtUp
	register := func(op *kopfgo.Operator) {
		op.On.Daemon("kopfexamples", retrying, kopfgo.ID("retrying"))
		cu.register(op)
	}
	op := startOperator(t, ns, kopfgo.Settings{}, register)
	createKex(t, ns, kexNamed(t, "r"))
	got := waitKex(t, ns, "r", "the result and no finalizer", func(u *unstructured.Unstructured) bool {
		done, _, _ := unstructured.NestedBool(u.Object, "status", "retrying", "finished")
		return done && len(u.GetFinalizers()) == 0
	})
	if got := j.get("r").retries; fmt.Sprint(got) != "[0 1 2 3]" {
		t.Errorf("retries seen = %v, want [0 1 2 3]", got)
	}
	if n := op.log.Count("Daemon 'retrying' failed temporarily: not yet"); n != 3 {
		t.Errorf("%d temporary failures logged, want 3", n)
	}
	if op.log.Count("Removing the finalizer, as there are no handlers requiring it.") != 1 {
		t.Error("the finalizer was not removed as no longer required")
	}
	// A daemon spawned again would need the finalizer again.
	patchKex(t, ns, "r", `{"spec":{"field":"again"}}`)
	cu.wait(t, ns, "r")
	if fin := getKex(t, ns, "r").GetFinalizers(); len(fin) != 0 {
		t.Errorf("finalizers = %v after a change: a returned daemon is not restarted", fin)
	}
	if n := len(j.get("r").retries); n != 4 {
		t.Errorf("%d invocations after a change, want 4: a returned daemon is not restarted", n)
	}
	_ = got

	op.stop(t)
	op2 := startOperator(t, ns, kopfgo.Settings{}, register)
	eventually(t, waitShort, "the daemon again after the restart", func() (bool, error) { return len(j.get("r").retries) == 8, nil })
	op2.log.WaitFor(t, "Daemon 'retrying' succeeded.", 1)
}

// (compat: timers-errors, daemons-errors): errors in timers override the schedule and the retries
// count afresh after a success; permanent and ignored errors end timers and
// daemons for good, per the errors mode.
func TestTimerAndDaemonErrorsModes(t *testing.T) {
	ns := namespace(t)
	var j journal
	calls := func(id string) int { return len(j.get(id).retries) }
	note := func(id string, d *kopfgo.Spawn) int {
		n := 0
		j.with(id, func(e *entry) { e.retries = append(e.retries, d.Retry); n = len(e.retries) })
		return n
	}
	op := startOperator(t, ns, kopfgo.Settings{}, func(op *kopfgo.Operator) {
		op.On.Timer("kopfexamples", func(ctx context.Context, tm *kopfgo.Spawn) (any, error) {
			if n := note("flaky", tm); tm.Retry < 3 && n <= 4 {
				return nil, fmt.Errorf("flaky %d", n)
			}
			return nil, nil
		}, kopfgo.ID("flaky"), kopfgo.Interval(4*time.Second), kopfgo.Backoff(time.Second))
		op.On.Timer("kopfexamples", func(ctx context.Context, tm *kopfgo.Spawn) (any, error) {
			note("doomed", tm)
			return nil, fmt.Errorf("broken")
		}, kopfgo.ID("doomed"), kopfgo.Interval(time.Second), kopfgo.Errors(kopfgo.ErrorsPermanent))
		op.On.Daemon("kopfexamples", func(ctx context.Context, d *kopfgo.Spawn) (any, error) {
			note("ignored", d)
			return nil, fmt.Errorf("shrugged off")
		}, kopfgo.ID("ignored"), kopfgo.Errors(kopfgo.ErrorsIgnored))
	})
	createKex(t, ns, kexNamed(t, "e"))
	eventually(t, waitShort, "5 attempts of the flaky timer", func() (bool, error) { return calls("flaky") >= 5, nil })
	if got := fmt.Sprint(j.get("flaky").retries[:5]); got != "[0 1 2 3 0]" {
		t.Errorf("the flaky timer's retries = %s, want [0 1 2 3 0]", got)
	}
	// Both have ended for good: their goroutines are gone, so their counts
	// are final.
	op.log.WaitFor(t, "Timer 'doomed' has exited on its own", 1)
	op.log.WaitFor(t, "Daemon 'ignored' has exited on its own", 1)
	if calls("doomed") != 1 || calls("ignored") != 1 {
		t.Errorf("doomed ran %d times, ignored %d; want once each", calls("doomed"), calls("ignored"))
	}
	for _, line := range []string{
		"Timer 'flaky' failed with an exception and will try again in 1 seconds: flaky 1",
		"Timer 'doomed' failed with an exception and will stop now: broken",
		"Daemon 'ignored' failed with an exception and will ignore it: shrugged off",
		"Timer 'doomed' has exited on its own and will not be retried or restarted.",
	} {
		if op.log.Count(line) != 1 {
			t.Errorf("not logged once: %q", line)
		}
	}
}

// Restarting the operator restarts the daemons (compat: daemons-spawn); no daemon ever
// runs twice at once for one object, whatever the events (compat: daemons-filters).
func TestRestartRestartsDaemonsAndNeverTwiceAtOnce(t *testing.T) {
	ns := namespace(t)
	var j journal
	monitor := func(ctx context.Context, d *kopfgo.Spawn) (any, error) {
		j.start(d.Name)
		for d.Sleep(ctx, time.Minute) {
		}
		j.exit(d.Name, context.Cause(ctx))
		return nil, nil
	}
	var cu caughtUp
	register := func(op *kopfgo.Operator) {
		op.On.Daemon("kopfexamples", monitor, kopfgo.ID("monitor"))
		cu.register(op)
	}
	names := []string{"x-1", "x-2", "x-3"}
	for _, n := range names {
		createKex(t, ns, kexNamed(t, n))
	}
	op := startOperator(t, ns, kopfgo.Settings{}, register)
	for _, n := range names {
		eventually(t, waitShort, "the daemon of "+n, func() (bool, error) { return j.get(n).starts == 1, nil })
	}
	for i := range 5 { // events of every kind: none may spawn a second daemon
		for _, n := range names {
			patchKex(t, ns, n, fmt.Sprintf(`{"metadata":{"labels":{"round":"%d"}},"spec":{"round":%d}}`, i, i))
			patchKex(t, ns, n, fmt.Sprintf(`{"status":{"round":%d}}`, i), "status")
		}
	}
	for _, n := range names {
		cu.wait(t, ns, n) // every event handled: a second daemon would have started by now
	}
	op.stop(t)
	for _, n := range names {
		e := j.get(n)
		if e.starts != 1 || e.running != 0 || len(e.causes) != 1 || e.causes[0] != kopfgo.ErrOperatorExiting {
			t.Errorf("%s after the stop: started %d, running %d, causes %v; want 1, 0, [ErrOperatorExiting]", n, e.starts, e.running, e.causes)
		}
	}
	startOperator(t, ns, kopfgo.Settings{}, register)
	for _, n := range names {
		eventually(t, waitShort, "the daemon of "+n+" after the restart", func() (bool, error) { return j.get(n).starts == 2, nil })
		if e := j.get(n); e.maxRunning != 1 {
			t.Errorf("%s: %d daemons at once, want 1", n, e.maxRunning)
		}
	}
}
