package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// StopSignals end an operator: the first one stops it gracefully.
var StopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// exit is os.Exit outside tests.
var exit = os.Exit

// SignalContext returns a context cancelled by the first SIGINT or SIGTERM,
// which is logged as Kopf logs it; a second one exits the process at once
// with 128+signal, and so does the ultimate timeout (if positive) when the
// process has not exited that long after the first signal: a handler or
// daemon that ignores its cancellation cannot keep the operator alive
// forever. ultimate is asked for the timeout when the first signal comes,
// not before: startup handlers may change it after this is called. stop
// releases the signals.
func SignalContext(parent context.Context, logger *slog.Logger, ultimate func() time.Duration) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, StopSignals...)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			logger.Info(fmt.Sprintf("Signal %s is received. Operator is stopping.", SignalName(s)))
			cancel()
		case <-done:
			return
		}
		var deadline <-chan time.Time
		timeout := ultimate()
		if timeout > 0 {
			t := time.NewTimer(timeout)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case s := <-sigs:
			logger.Warn(fmt.Sprintf("Signal %s is received again. Operator exits immediately.", SignalName(s)))
			exit(SignalExitCode(s))
		case <-deadline:
			logger.Error(fmt.Sprintf("The operator has not exited within %s after the stop signal; it exits now.", timeout))
			exit(SignalExitCode(syscall.SIGKILL))
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// SignalName is the C name of the stop signals, as Python names them.
func SignalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// SignalExitCode is the shell's exit code of a process killed by s.
func SignalExitCode(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return ExitError
}
