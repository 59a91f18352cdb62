package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a running operator.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error

	mu      sync.Mutex
	lines   []string
	changed chan struct{} // closed and replaced on every new line
	echo    io.Writer
}

// Options configure Start.
type Options struct {
	Dir  string
	Env  []string  // added to the current environment
	Echo io.Writer // also copy the log here (e.g. os.Stderr when debugging)
}

// Start runs name with args and captures its stdout and stderr.
func Start(name string, args []string, opts Options) (*Process, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = opts.Dir
	cmd.Env = append(os.Environ(), opts.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	p := &Process{cmd: cmd, done: make(chan struct{}), changed: make(chan struct{}), echo: opts.Echo}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", name, err)
	}
	go p.read(pr)
	go func() {
		p.err = cmd.Wait()
		pw.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *Process) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		p.lines = append(p.lines, line)
		close(p.changed)
		p.changed = make(chan struct{})
		if p.echo != nil {
			fmt.Fprintln(p.echo, line)
		}
		p.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r)
}

// Lines returns the log lines so far.
func (p *Process) Lines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// Log returns the whole log so far.
func (p *Process) Log() string { return strings.Join(p.Lines(), "\n") }

// Count returns how many lines contain substr.
func (p *Process) Count(substr string) int {
	n := 0
	for _, l := range p.Lines() {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

// CountMatch returns how many lines match re.
func (p *Process) CountMatch(re *regexp.Regexp) int {
	n := 0
	for _, l := range p.Lines() {
		if re.MatchString(l) {
			n++
		}
	}
	return n
}

// WaitFor waits until at least n lines contain substr, or the timeout passes
// or the process exits (both errors include the log's tail).
func (p *Process) WaitFor(ctx context.Context, substr string, n int, timeout time.Duration) error {
	return p.WaitUntil(ctx, timeout, fmt.Sprintf("%d× %q", n, substr), func() bool { return p.Count(substr) >= n })
}

// WaitUntil waits until cond holds, re-checking on every new log line and
// every 100ms (conditions may look at the cluster, not only the log).
func (p *Process) WaitUntil(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		p.mu.Lock()
		changed := p.changed
		p.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-p.done:
			if cond() {
				return nil
			}
			return fmt.Errorf("operator exited (%v) before %s; log tail:\n%s", p.err, what, p.Tail(40))
		case <-ctx.Done():
			return fmt.Errorf("timed out after %s waiting for %s; log tail:\n%s", timeout, what, p.Tail(40))
		}
	}
}

// Tail returns the last n log lines.
func (p *Process) Tail(n int) string {
	lines := p.Lines()
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Stop sends SIGTERM to the process group and waits for the exit (up to
// grace, then SIGKILL). It returns the process's exit error, if any.
func (p *Process) Stop(grace time.Duration) error {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return p.exitErr()
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("operator did not stop within %s after SIGTERM; killed", grace)
	}
}

// Kill sends SIGKILL to the process group and waits for the exit.
func (p *Process) Kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitCode is the exit code once Done is closed (-1 when killed by a signal).
func (p *Process) ExitCode() int { return p.cmd.ProcessState.ExitCode() }

func (p *Process) exitErr() error {
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return fmt.Errorf("operator exited with code %d", ee.ExitCode())
	}
	return p.err
}
