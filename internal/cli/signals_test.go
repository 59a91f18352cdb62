package cli

import (
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/internal/logging"
	"github.com/kopfgo/kopfgo/internal/testlog"
)

// The first SIGINT/SIGTERM stops gracefully; a second one exits at once.
func TestSignalContext(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no signals to self on windows")
	}
	exited := make(chan int, 1)
	exit = func(code int) { exited <- code }
	t.Cleanup(func() { exit = os.Exit })

	var out testlog.Buffer
	logger := logging.New(logging.Config{Format: logging.FormatPlain, Writer: &out, Level: slog.LevelDebug})
	ctx, stop := SignalContext(t.Context(), logger, func() time.Duration { return 0 })
	defer stop()
	self, _ := os.FindProcess(os.Getpid())

	if err := self.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the first signal did not cancel the context")
	}
	if err := self.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		if code != 130 {
			t.Errorf("exit code %d, want 130", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second signal did not exit")
	}
	want := "Signal SIGTERM is received. Operator is stopping.\nSignal SIGINT is received again. Operator exits immediately.\n"
	if got := out.String(); !strings.HasPrefix(got, want) {
		t.Errorf("logged %q, want %q", got, want)
	}
}

// stop releases the signals: nothing is logged, the context ends.
func TestSignalContextStop(t *testing.T) {
	var out testlog.Buffer
	ctx, stop := SignalContext(t.Context(), logging.New(logging.Config{Writer: &out}), func() time.Duration { return 0 })
	stop()
	<-ctx.Done()
	if out.String() != "" {
		t.Errorf("logged %q", out.String())
	}
}

// The ultimate timeout is the one in force when the signal comes, not when
// the context was made: startup handlers may set it in between (compat:
// settings-process). It was off (0) at first here, then set.
func TestSignalContextUltimateTimeoutReadAtTheSignal(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no signals to self on windows")
	}
	exited := make(chan int, 1)
	exit = func(code int) { exited <- code }
	t.Cleanup(func() { exit = os.Exit })

	var out testlog.Buffer
	logger := logging.New(logging.Config{Format: logging.FormatPlain, Writer: &out})
	var ultimate atomic.Int64
	ctx, stop := SignalContext(t.Context(), logger, func() time.Duration { return time.Duration(ultimate.Load()) })
	defer stop()
	ultimate.Store(int64(time.Millisecond))
	self, _ := os.FindProcess(os.Getpid())
	if err := self.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	select {
	case code := <-exited:
		if code != 137 {
			t.Errorf("exit code %d, want 137", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the ultimate timeout set after SignalContext did not exit the process")
	}
	if want := "has not exited within 1ms after the stop signal"; !strings.Contains(out.String(), want) {
		t.Errorf("logged %q, want it to contain %q", out.String(), want)
	}
}
