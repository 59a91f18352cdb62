package cluster

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"testing"
)

// EnvKeepDir, set to 1, keeps the directories of clusters started by Main and
// NewForTest after the tests, to read the servers' logs.
const EnvKeepDir = "KOPFGO_KEEP_CLUSTER_DIR"

var (
	sharedMu sync.Mutex
	shared   *Cluster
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

func runMain(m *testing.M, setup func(*Cluster)) int {
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "kopfgo/e2e/cluster: "+format+"\n", args...)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	c, err := Start(ctx, Options{Logf: logf, KeepDir: os.Getenv(EnvKeepDir) == "1"})
	cancel()
	if err != nil {
		logf("cannot start the test cluster: %v", err)
		return 1
	}

	// From here on a signal stops the cluster and ends the binary: the tests
	// cannot be interrupted cleanly from outside, but the servers can.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		logf("%v: stopping the test cluster", sig)
		if err := c.Stop(); err != nil {
			logf("stopping the test cluster: %v", err)
		}
		os.Exit(130)
	}()
	defer func() {
		signal.Stop(sigs)
		close(sigs)
	}()

	prev, hadPrev := os.LookupEnv("KUBECONFIG")
	os.Setenv("KUBECONFIG", c.Kubeconfig)
	sharedMu.Lock()
	shared = c
	sharedMu.Unlock()

	code := func() (code int) {
		// A setup that cannot go on panics (it has no *testing.T to fail);
		// the cluster must still be stopped.
		defer func() {
			if r := recover(); r != nil {
				logf("panic before or while running the tests: %v\n%s", r, debug.Stack())
				code = 2
			}
		}()
		if setup != nil {
			setup(c)
		}
		return m.Run()
	}()

	sharedMu.Lock()
	shared = nil
	sharedMu.Unlock()
	if hadPrev {
		os.Setenv("KUBECONFIG", prev)
	} else {
		os.Unsetenv("KUBECONFIG")
	}
	if err := c.Stop(); err != nil {
		logf("stopping the test cluster: %v", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Shared returns the cluster started by Main for this test binary. It fails
// the test if TestMain does not call Main.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil {
		t.Fatal("no shared test cluster: call cluster.Main(m, nil) from TestMain, or use cluster.NewForTest for a cluster of the test's own")
	}
	return shared
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
