//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo"
)

// TestManyDaemons runs one daemon on each of N objects (KOPFGO_E2E_DAEMONS,
// default 100; the figure is for 1000) and reports what they cost
// the operator's process: goroutines and heap per object, against the same
// operator without daemons on the same objects, and the time the shutdown
// takes to stop them all. It checks that every daemon starts once and
// observes ErrOperatorExiting, and that Run returns with every goroutine
// it started gone.
func TestManyDaemons(t *testing.T) {
	n := 100
	if s := os.Getenv("KOPFGO_E2E_DAEMONS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n <= 0 {
			t.Fatalf("KOPFGO_E2E_DAEMONS=%q: want a positive number", s)
		}
	}
	ns := namespace(t)
	createMany(t, ns, n)
	// Workers idle out soon, so that the steady state comes soon.
	var settings kopfgo.Settings
	settings.Queueing.IdleTimeout = time.Second

	// The floor: the same objects under an operator without daemons (a
	// resume handler that the never-handled objects do not call; the
	// creation cycle stores their diff-bases).
	g0, h0 := footprint()
	base := startOperator(t, ns, settings, func(op *kopfgo.Operator) {
		op.On.Resume("kopfexamples", func(ctx context.Context, c *kopfgo.Change) (any, error) { return nil, nil }, kopfgo.ID("noop"))
	})
	base.log.WaitFor(t, "Patching with: {\"metadata\":{\"annotations\":{\"kopf.zalando.org/last-handled-configuration\"", n) // no "is processed" line without handlers, as in Kopf
	gBase, hBase := settled(t, g0)
	base.stop(t)

	var started, exiting atomic.Int64
	begin := time.Now()
	op := startOperator(t, ns, settings, func(op *kopfgo.Operator) {
		op.On.Daemon("kopfexamples", func(ctx context.Context, d *kopfgo.Spawn) (any, error) {
			started.Add(1)
			for d.Sleep(ctx, time.Minute) {
			}
			if context.Cause(ctx) == kopfgo.ErrOperatorExiting {
				exiting.Add(1)
			}
			return nil, nil
		}, kopfgo.ID("accompany"))
	})
	eventually(t, waitLong, fmt.Sprintf("%d daemons", n), func() (bool, error) { return started.Load() == int64(n), nil })
	allStarted := time.Since(begin)
	op.log.WaitFor(t, "Adding the finalizer", n)
	gDaemons, hDaemons := settled(t, g0)
	took := op.stop(t)

	if got := started.Load(); got != int64(n) {
		t.Errorf("%d daemon starts, want %d", got, n)
	}
	if got := exiting.Load(); got != int64(n) {
		t.Errorf("%d daemons observed ErrOperatorExiting, want %d", got, n)
	}
	gAfter, _ := settled(t, g0)
	if gAfter > g0+10 {
		t.Errorf("%d goroutines after the operator stopped, %d before it started", gAfter, g0)
	}
	perObj := func(a, b float64) float64 { return (a - b) / float64(n) }
	t.Logf("%d objects: all daemons started %v after the operator; shutdown took %v",
		n, allStarted.Round(time.Millisecond), took.Round(time.Millisecond))
	t.Logf("goroutines: %d before, %d with the floor operator, %d with daemons: %.2f per object for the daemons",
		g0, gBase, gDaemons, perObj(float64(gDaemons), float64(gBase)))
	for _, m := range []struct {
		what              string
		at0, base, daemon uint64
	}{{"heap", h0.heap, hBase.heap, hDaemons.heap}, {"stacks", h0.stacks, hBase.stacks, hDaemons.stacks}} {
		t.Logf("%s in use: %.1f MB with the floor operator, %.1f MB with daemons: %.1f KB per object for the daemons",
			m.what, mb(m.base-m.at0), mb(m.daemon-m.at0), perObj(float64(m.daemon), float64(m.base))/1024)
	}
}

func createMany(t *testing.T, ns string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	names := make(chan string)
	for range 8 {
		wg.Go(func() {
			for name := range names {
				createKex(t, ns, kexNamed(t, name))
			}
		})
	}
	for i := range n {
		names <- fmt.Sprintf("many-%04d", i)
	}
	close(names)
	wg.Wait()
}

// footprint is the process's goroutines, and its heap and goroutine stacks
// in use, after a GC.
func footprint() (int, mem) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return runtime.NumGoroutine(), mem{heap: m.HeapInuse, stacks: m.StackInuse}
}

type mem struct{ heap, stacks uint64 }

// settled waits until the per-object workers have gone idle and exited
// (after Queueing.IdleTimeout, 1s here, without events), so that what
// remains is the operator's steady state, and measures it: the goroutine
// count must hold over a window longer than the idle timeout.
func settled(t *testing.T, floor int) (int, mem) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	g, _ := footprint()
	for {
		time.Sleep(2 * time.Second) // a window longer than the idle timeout
		g2, h2 := footprint()
		if g2 == g && g2 >= floor {
			return g2, h2
		}
		if time.Now().After(deadline) {
			t.Fatalf("the goroutine count never settled: %d, then %d", g, g2)
		}
		g = g2
	}
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }
