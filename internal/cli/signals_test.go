package cli

import (
	"log/slog"
	"os"
	"runtime"
	"strings"
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
	ctx, stop := SignalContext(t.Context(), logger, 0)
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
	ctx, stop := SignalContext(t.Context(), logging.New(logging.Config{Writer: &out}), 0)
	stop()
	<-ctx.Done()
	if out.String() != "" {
		t.Errorf("logged %q", out.String())
	}
}
