package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeGo stands in for the go command: in slow mode it writes a partial
// output, starts two long "compilers" in its process group, says so in
// $KOPFGO_TEST_READY and waits for them; in fast mode it writes a runnable
// output at once.
const fakeGo = `#!/bin/sh
out=""
while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
if [ "$KOPFGO_TEST_FAKE_GO" = fast ]; then printf '#!/bin/sh\necho built\n' > "$out"; exit 0; fi
echo partial > "$out"
sleep 300 &
sleep 300 &
echo $$ > "$KOPFGO_TEST_READY"
wait
`

// fakeToolEnv is an environment in which ensureTool builds slowTool with
// fakeGo: a tools module for it, the fake go first on PATH, cache in dir.
func fakeToolEnv(t *testing.T, dir string) []string {
	t.Helper()
	bin := filepath.Join(dir, "fakebin")
	src := filepath.Join(dir, "tools", slowTool.name)
	must(t, os.MkdirAll(bin, 0o755))
	must(t, os.MkdirAll(src, 0o755))
	must(t, os.WriteFile(filepath.Join(bin, "go"), []byte(fakeGo), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module example.com/slow\n"), 0o644))
	return []string{
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		EnvToolsDir + "=" + filepath.Join(dir, "tools"),
		EnvCache + "=" + filepath.Join(dir, "cache"),
		"KOPFGO_TEST_READY=" + filepath.Join(dir, "ready"),
	}
}

var slowTool = tool{name: "slow", version: "v1", env: "KOPFGO_TEST_SLOW_UNSET"}

// TestBuildHelperProcess is not a test: TestKilledBuilderLeavesNoProcess
// runs the test binary with it as a process that builds and gets killed.
func TestBuildHelperProcess(t *testing.T) {
	if os.Getenv("KOPFGO_TEST_BUILD_HELPER") != "1" {
		t.Skip("a helper process of TestKilledBuilderLeavesNoProcess")
	}
	_, err := ensureTool(t.Context(), slowTool, t.Logf)
	t.Fatalf("the build returned (%v); it was meant to be killed", err)
}

// A process killed while it builds (go test's timeout, a Ctrl-C on a
// parent, SIGKILL) takes its whole build with it, and the next build
// cleans up what it left.
func TestKilledBuilderLeavesNoProcess(t *testing.T) {
	dir := t.TempDir()
	env := fakeToolEnv(t, dir)
	helper := exec.Command(os.Args[0], "-test.run=^TestBuildHelperProcess$", "-test.v")
	helper.Env = append(os.Environ(), append(env, "KOPFGO_TEST_BUILD_HELPER=1")...)
	var out bytes.Buffer
	helper.Stdout, helper.Stderr = &out, &out
	must(t, helper.Start())
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })

	goPid := waitForFile(t, filepath.Join(dir, "ready"), &out)
	binDir := filepath.Join(dir, "cache", "bin")
	rec, err := readLockRecord(filepath.Join(binDir, ".lock"))
	if err != nil || rec.pid != helper.Process.Pid || rec.pgid <= 0 {
		t.Fatalf("lock record %+v (%v), want the helper's pid %d and its build's group", rec, err, helper.Process.Pid)
	}
	t.Cleanup(func() { _ = syscall.Kill(-rec.pgid, syscall.SIGKILL) }) // when the test fails
	if pgid, _ := syscall.Getpgid(goPid); pgid != rec.pgid || rec.pgid == helper.Process.Pid {
		t.Fatalf("go (pid %d) runs in group %d, want the build's own group %d", goPid, pgid, rec.pgid)
	}
	if n := len(groupMembers(t, rec.pgid)); n < 4 {
		t.Fatalf("%d processes in the build's group, want the shell, go and two compilers", n)
	}

	must(t, helper.Process.Kill())
	_ = helper.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for left := groupMembers(t, rec.pgid); len(left) > 0; left = groupMembers(t, rec.pgid) {
		if time.Now().After(deadline) {
			t.Fatalf("processes %v of the build outlived the killed builder", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	partial, _ := filepath.Glob(filepath.Join(binDir, buildPrefix+"*"))
	if len(partial) != 1 {
		t.Fatalf("temporary outputs %v; the killed build was to leave one behind", partial)
	}

	// The next build recovers: the partial output goes, the build succeeds.
	for _, kv := range append(env, "KOPFGO_TEST_FAKE_GO=fast") {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	var logs []string
	logf := func(format string, args ...any) { logs = append(logs, formatLog(format, args...)) }
	path, err := ensureTool(t.Context(), slowTool, logf)
	if err != nil {
		t.Fatalf("the build after the killed one: %v", err)
	}
	if got, err := exec.Command(path).Output(); err != nil || string(got) != "built\n" {
		t.Errorf("the binary says %q (%v)", got, err)
	}
	if _, err := os.Stat(partial[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the partial output %s is still there (%v)", partial[0], err)
	}
	if !strings.Contains(strings.Join(logs, "\n"), "removed "+partial[0]) {
		t.Errorf("the recovery was not logged: %q", logs)
	}
}

// A build group that survived its builder (e.g. on a system without
// parent-death signals) is killed by the next holder of the lock; a process
// that merely reuses the recorded id is left alone.
func TestRecoverKillsOnlyOurLeftoverBuild(t *testing.T) {
	binDir := t.TempDir()
	for _, tc := range []struct {
		marker string
		killed bool
	}{{buildMarker, true}, {"someone-else", false}} {
		leftover := exec.Command("/bin/sh", "-c", `sleep 300 & wait`, tc.marker)
		leftover.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		must(t, leftover.Start())
		done := make(chan struct{})
		go func() { _ = leftover.Wait(); close(done) }()
		pgid := leftover.Process.Pid
		// Start returns once exec has begun, before the kernel has set the
		// new command line: /proc shows it empty for a moment, and recover
		// would take the group for someone else's. A real leftover has long
		// been running; so does this one before the lock's next holder looks.
		waitForCmdline(t, pgid, tc.marker)

		lock, err := lockFile(t.Context(), filepath.Join(binDir, ".lock"), nil)
		must(t, err)
		lock.record(pgid)
		must(t, os.WriteFile(filepath.Join(binDir, buildPrefix+"x-1"), nil, 0o600))
		lock.recover(binDir, nil)
		lock.unlock()

		select {
		case <-done:
			if !tc.killed {
				t.Errorf("%s: killed a process group that was not a build", tc.marker)
			}
		case <-time.After(5 * time.Second):
			if tc.killed {
				t.Errorf("%s: the leftover build survives", tc.marker)
			}
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
		if left, _ := filepath.Glob(filepath.Join(binDir, buildPrefix+"*")); len(left) != 0 {
			t.Errorf("temporary outputs %v not removed", left)
		}
		if rec, _ := readLockRecord(filepath.Join(binDir, ".lock")); rec.pgid != 0 {
			t.Errorf("the lock still records group %d", rec.pgid)
		}
	}
}

// waitForCmdline waits until process pid's command line ends in last.
func waitForCmdline(t *testing.T, pid int, last string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if args := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00"); args[len(args)-1] == last {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d's command line is %q, want one ending in %q", pid, data, last)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitForFile(t *testing.T, path string, out *bytes.Buffer) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if data, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(data), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			must(t, err)
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("the helper's build did not start; its output:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupMembers lists the living (not zombie) processes of group pgid.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	must(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// After the parenthesised name: state, ppid, pgrp.
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func formatLog(format string, args ...any) string { return fmt.Sprintf(format, args...) }
