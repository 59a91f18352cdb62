package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kopfgo/kopfgo/e2e/bench/probe"
)

// process is a running contender.
type process struct {
	name    string
	cmd     *exec.Cmd
	started time.Time
	addr    string // the probe's loopback address
	done    chan struct{}
	log     *os.File
	sink    *httptest.Server // kopfgo-tracing's OTLP sink; nil for the others

	stopOnce sync.Once
	stopErr  error
}

// startContender runs a contender's binary on the namespace and waits for
// its probe's address. Its stdout and stderr go to logPath.
func startContender(bin, name, kubeconfig, namespace, logPath string, profile string) (*process, error) {
	return startContenderWith(bin, name, kubeconfig, namespace, logPath, profile, nil)
}

// startContenderWith is startContender with variables added to the
// contender's environment.
func startContenderWith(bin, name, kubeconfig, namespace, logPath string, profile string, env []string) (*process, error) {
	args := []string{"-kubeconfig", kubeconfig, "-namespace", namespace}
	if profile != "" {
		args = append(args, "-cpuprofile", profile+".cpu.pprof", "-memprofile", profile+".heap.pprof")
	}
	if err := evictPages(bin); err != nil {
		return nil, err
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	switch name {
	case "kopfgo-metrics":
		cmd.Env = append(cmd.Env, "KOPFGO_BENCH_METRICS=1")
	case "kopfgo-noconditions":
		cmd.Env = append(cmd.Env, "KOPFGO_BENCH_NO_CONDITIONS=1")
	}
	var sink *httptest.Server
	if name == "kopfgo-tracing" {
		// Every span is sampled and exported over OTLP/HTTP to a sink in
		// the bench's own process, so that the contender pays for the
		// export (serializing, sending) and not for a collector.
		sink = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
		}))
		cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+sink.URL, "OTEL_SERVICE_NAME=kopfgo-bench")
	}
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{}), log: logf, sink: sink}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "probe: "); ok {
				select {
				case addr <- a:
				default:
				}
				continue
			}
			fmt.Fprintln(logf, sc.Text())
		}
		_, _ = io.Copy(logf, out)
	}()
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	select {
	case p.addr = <-addr:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited at start; see %s", name, logPath)
	case <-time.After(30 * time.Second):
		p.stop()
		return nil, fmt.Errorf("%s did not announce its probe within 30s; see %s", name, logPath)
	}
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) stats() (probe.Stats, error) {
	var s probe.Stats
	resp, err := http.Get("http://" + p.addr + "/stats")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

// waitWatching waits until the contender has listed the objects and started
// watching them: from then on it sees every change.
func (p *process) waitWatching(timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		s, err := p.stats()
		if err == nil && s.WatchStarted != 0 {
			return time.Unix(0, s.WatchStarted), nil
		}
		select {
		case <-p.done:
			return time.Time{}, fmt.Errorf("%s exited before watching; see %s", p.name, p.log.Name())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%s did not start watching within %s (last error: %v)", p.name, timeout, err)
		}
	}
}

type sample struct {
	at  time.Time
	cpu time.Duration
}

// quiet waits until the contender has been idle for a whole window: its CPU
// time grew by at most two clock ticks over it. It returns the sample that
// opened that window, the moment the contender went idle, and what its CPU
// time was then. Only samples from `from` on count.
func (p *process) quiet(ctx context.Context, from time.Time, window, timeout time.Duration) (sample, error) {
	const every = 20 * time.Millisecond
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var samples []sample
	cand := 0
	for {
		cpu, err := cpuTime(p.pid())
		if err != nil {
			return sample{}, fmt.Errorf("%s: %w", p.name, err)
		}
		if now := time.Now(); !now.Before(from) {
			samples = append(samples, sample{now, cpu})
		}
		for cand < len(samples) {
			j := cand + 1
			for j < len(samples) && samples[j].at.Sub(samples[cand].at) < window {
				j++
			}
			if j == len(samples) {
				break // the window is not over yet
			}
			if samples[j].cpu-samples[cand].cpu <= 2*clockTick {
				return samples[cand], nil
			}
			cand++
		}
		select {
		case <-ctx.Done():
			return sample{}, fmt.Errorf("%s did not go idle within %s", p.name, timeout)
		case <-p.done:
			return sample{}, fmt.Errorf("%s exited; see %s", p.name, p.log.Name())
		case <-time.After(every):
		}
	}
}

// stop sends SIGTERM and waits (30s, then SIGKILL). Only the first call
// stops; later ones return its outcome.
func (p *process) stop() error {
	p.stopOnce.Do(func() { p.stopErr = p.terminate() })
	return p.stopErr
}

func (p *process) terminate() error {
	defer p.log.Close()
	if p.sink != nil {
		defer p.sink.Close()
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s did not stop within 30s of SIGTERM; killed", p.name)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		return errors.New(p.name + " exited with code " + fmt.Sprint(code) + "; see " + p.log.Name())
	}
	return nil
}
