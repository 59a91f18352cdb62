package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func waitForLog(t *testing.T, path, text string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if data, _ := os.ReadFile(path); strings.Contains(string(data), text) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%q never appeared in %s", text, path)
}

func TestProcessStopEscalatesToKill(t *testing.T) {
	log := filepath.Join(t.TempDir(), "stubborn.log")
	// Ignores SIGTERM, and has a child in its process group that must die
	// too. The quotes keep the marker out of the command line in the log.
	p, err := startProcess("stubborn", "/bin/sh", []string{"-c", `trap '' TERM; sleep 60 & echo "child=$! RE""ADY"; wait`}, log)
	if err != nil {
		t.Fatal(err)
	}
	waitForLog(t, log, "READY")
	data, _ := os.ReadFile(log)
	after := string(data)[strings.LastIndex(string(data), "child=")+len("child="):]
	child, err := strconv.Atoi(strings.Fields(after)[0])
	if err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	if err := p.stop(300 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < 300*time.Millisecond {
		t.Errorf("stopped in %s: SIGTERM was ignored, so it must have waited the grace period", took)
	}
	if alive(t, child) {
		t.Error("the child in the process group survived")
	}
	if err := p.stop(time.Second); err != nil {
		t.Errorf("stopping an exited process: %v", err)
	}
}

// alive tells whether pid runs, counting a zombie as dead: the orphaned child
// is reaped by init, which may take its time.
func alive(t *testing.T, pid int) bool {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		// The state follows the parenthesised command name.
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i+1:]), " Z") {
			return false
		}
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestProcessStopIsGracefulFirst(t *testing.T) {
	log := filepath.Join(t.TempDir(), "polite.log")
	p, err := startProcess("polite", "/bin/sh", []string{"-c", `trap 'echo b""ye; exit 0' TERM; echo RE""ADY; while :; do sleep 0.05; done`}, log)
	if err != nil {
		t.Fatal(err)
	}
	waitForLog(t, log, "READY")
	if err := p.stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitForLog(t, log, "bye")
}

func TestEarlyExitIsReportedWithLogAndPortConflict(t *testing.T) {
	log := filepath.Join(t.TempDir(), "clash.log")
	p, err := startProcess("clash", "/bin/sh", []string{"-c", "echo 'listen tcp 127.0.0.1:1: bind: address already in use'; exit 1"}, log)
	if err != nil {
		t.Fatal(err)
	}
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err = waitHTTP(ctx, p, "http://127.0.0.1:"+strconv.Itoa(ports[0])+"/health", "")
	if !errors.Is(err, errPortInUse) {
		t.Fatalf("error %v, want errPortInUse", err)
	}
	if !strings.Contains(err.Error(), "clash exited during start-up") || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("the error lacks the process name or the log's tail: %v", err)
	}
}

func TestWaitHTTPTimesOutWithLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "silent.log")
	p, err := startProcess("silent", "/bin/sh", []string{"-c", `echo "some out""put"; sleep 60`}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop(time.Second)
	waitForLog(t, log, "some output")
	ports, _ := freePorts(1)
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	err = waitHTTP(ctx, p, "http://127.0.0.1:"+strconv.Itoa(ports[0])+"/readyz", "")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "some output") {
		t.Errorf("error %v, want a deadline error with the log's tail", err)
	}
}
