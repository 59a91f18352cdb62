package cluster

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvKeepDir, set to 1, keeps the directories of clusters started by Main and
// NewForTest after the tests, to read the servers' logs.
const EnvKeepDir = "KOPFGO_KEEP_CLUSTER_DIR"

var (
	sharedMu sync.Mutex
	shared   *Cluster
	lazy     *lazyStart // set by MainLazy for the run of the tests
)

// Main runs a test binary's tests against one cluster shared by all of them.
// Call it from TestMain:
//
//	func TestMain(m *testing.M) { cluster.Main(m, nil) }
//
// It builds or finds the binaries, starts the cluster, sets KUBECONFIG for the
// tests (and anything they run), calls setup if not nil, runs the tests, stops
// the cluster and exits with the tests' code. setup may panic to abort (e.g.
// when its CRDs do not apply): the cluster is stopped all the same. A SIGINT or SIGTERM stops the
// cluster before the binary exits, so no server or temporary directory is left
// behind; a SIGKILL still kills the servers (they have a parent-death signal)
// but leaves the directory.
func Main(m *testing.M, setup func(*Cluster)) {
	os.Exit(runMain(m, setup))
}

// MainLazy is Main with the cluster started by the first Shared call of a
// test instead of before the tests, so that a run of tests that need no
// cluster (go test -run Unit) starts nothing. check, if not nil, runs
// before that start with the test that asked: its error fails that test
// and every later Shared at once, without a start (e.g. when the servers
// are missing and the test's deadline leaves no time to build them). A
// failing setup fails the tests the same way.
func MainLazy(m *testing.M, setup func(*Cluster), check func(testing.TB) error) {
	os.Exit(runMainLazy(m, setup, check))
}

func mainLogf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kopfgo/e2e/cluster: "+format+"\n", args...)
}

func runMain(m *testing.M, setup func(*Cluster)) int {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	h := &harness{}
	err := h.start(ctx, setup)
	cancel()
	var panicked *setupPanic
	switch {
	case errors.As(err, &panicked):
		mainLogf("%v", err)
		return h.finish(2)
	case err != nil:
		mainLogf("%v", err)
		return h.finish(1)
	}
	return h.finish(m.Run())
}

func runMainLazy(m *testing.M, setup func(*Cluster), check func(testing.TB) error) int {
	l := &lazyStart{setup: setup, check: check}
	sharedMu.Lock()
	lazy = l
	sharedMu.Unlock()
	code := m.Run()
	sharedMu.Lock()
	lazy = nil
	sharedMu.Unlock()
	return l.h.finish(code)
}

// lazyStart starts the shared cluster once, for MainLazy.
type lazyStart struct {
	setup func(*Cluster)
	check func(testing.TB) error
	once  sync.Once
	h     harness
	err   error
}

func (l *lazyStart) get(t testing.TB) (*Cluster, error) {
	l.once.Do(func() {
		if l.check != nil {
			if l.err = l.check(t); l.err != nil {
				return
			}
		}
		// A start that cannot finish before go test's timeout is cut short
		// here, cleanly, rather than by the timeout's panic, which would
		// leave a partial build behind.
		ctx := t.Context()
		if deadline, ok := TestDeadline(t); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, deadline.Add(-deadlineMargin))
			defer cancel()
		}
		l.err = l.h.start(ctx, l.setup)
	})
	if l.err != nil {
		return nil, l.err
	}
	return l.h.c, nil
}

// deadlineMargin is kept between a lazy start's end and the test binary's
// timeout, for the failure to be reported.
const deadlineMargin = 20 * time.Second

// harness is the shared cluster's life: started, shared with the tests
// through KUBECONFIG and Shared, stopped on a signal or at the end.
type harness struct {
	c       *Cluster
	sigs    chan os.Signal
	prev    string
	hadPrev bool
}

// setupPanic is a setup that panicked: it had no *testing.T to fail.
type setupPanic struct {
	value any
	stack []byte
}

func (p *setupPanic) Error() string {
	return fmt.Sprintf("the test cluster's setup panicked: %v\n%s", p.value, p.stack)
}

func (h *harness) start(ctx context.Context, setup func(*Cluster)) error {
	c, err := Start(ctx, Options{Logf: mainLogf, KeepDir: os.Getenv(EnvKeepDir) == "1"})
	if err != nil {
		return fmt.Errorf("cannot start the test cluster: %w", err)
	}
	h.c = c

	// From here on a signal stops the cluster and ends the binary: the tests
	// cannot be interrupted cleanly from outside, but the servers can.
	h.sigs = make(chan os.Signal, 1)
	signal.Notify(h.sigs, syscall.SIGINT, syscall.SIGTERM)
	go func(sigs <-chan os.Signal) {
		sig, ok := <-sigs
		if !ok {
			return
		}
		mainLogf("%v: stopping the test cluster", sig)
		if err := c.Stop(); err != nil {
			mainLogf("stopping the test cluster: %v", err)
		}
		os.Exit(130)
	}(h.sigs)

	h.prev, h.hadPrev = os.LookupEnv("KUBECONFIG")
	os.Setenv("KUBECONFIG", c.Kubeconfig)
	sharedMu.Lock()
	shared = c
	sharedMu.Unlock()

	if setup == nil {
		return nil
	}
	return func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = &setupPanic{value: r, stack: debug.Stack()}
			}
		}()
		setup(c)
		return nil
	}()
}

// finish stops the cluster if it was started, and returns the binary's exit
// code: code, or 1 when the cluster does not stop cleanly.
func (h *harness) finish(code int) int {
	if h.c == nil {
		return code
	}
	sharedMu.Lock()
	shared = nil
	sharedMu.Unlock()
	if h.hadPrev {
		os.Setenv("KUBECONFIG", h.prev)
	} else {
		os.Unsetenv("KUBECONFIG")
	}
	signal.Stop(h.sigs)
	close(h.sigs)
	if err := h.c.Stop(); err != nil {
		mainLogf("stopping the test cluster: %v", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Shared returns the cluster started by Main (or, started now if it is the
// first call, by MainLazy) for this test binary. It fails the test if
// TestMain calls neither, or if MainLazy's start failed.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	sharedMu.Lock()
	l, c := lazy, shared
	sharedMu.Unlock()
	if l != nil {
		c, err := l.get(t)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c == nil {
		t.Fatal("no shared test cluster: call cluster.Main(m, nil) from TestMain, or use cluster.NewForTest for a cluster of the test's own")
	}
	return c
}

// processStarted approximates when go test's timeout began: the test binary
// arms it as its tests begin, a moment after the process starts.
var processStarted = time.Now()

// TestDeadline is when go test's -timeout ends the test binary: t's
// deadline if t has one (a *testing.T), else the -test.timeout flag counted
// from the binary's start; false when there is no timeout (-timeout 0).
func TestDeadline(t testing.TB) (time.Time, bool) {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		return d.Deadline()
	}
	f := flag.Lookup("test.timeout")
	if f == nil {
		return time.Time{}, false
	}
	timeout, ok := f.Value.(flag.Getter).Get().(time.Duration)
	if !ok || timeout <= 0 {
		return time.Time{}, false
	}
	return processStarted.Add(timeout), true
}

// NewForTest starts a cluster of the test's own, stopped when the test ends.
// It costs one start-up (about 15 s), so prefer Main's shared cluster unless
// the test breaks the cluster (e.g. stops its apiserver).
func NewForTest(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	if os.Getenv(EnvKeepDir) == "1" {
		opts.KeepDir = true
	}
	c, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("starting a test cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the test cluster: %v", err)
		}
	})
	return c
}
