//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kopfgo/kopfgo/e2e/runner"
)

// An operator in a container with a memory limit gives Go's garbage
// collector 90% of it as a soft limit, and says so; with
// --memory-limit-ratio=off it leaves Go alone. The container is a memory
// cgroup made for the test under the test's own; where none can be made
// (not root, a read-only cgroup file system), the test says so and skips.
func TestMemoryLimitFromTheContainer(t *testing.T) {
	cg := memoryCgroup(t, 1<<30)
	ns := namespace(t)
	inCgroup := func(extra ...string) *runner.Process {
		// The shell joins the cgroup and becomes kopfgo run, whose
		// operator process inherits the cgroup.
		args := append([]string{"-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(cg, "cgroup.procs"),
			kopfgoCLI(t), "run", "./examples/01-minimal", "-n", ns, "--standalone", "--verbose", "--log-format=plain"}, extra...)
		return startProcess(t, "sh", args, runner.Options{Dir: repoRoot, Env: []string{"GOMEMLIMIT="}})
	}

	p := inCgroup()
	waitLog(t, p, "Go's soft memory limit is 922 MiB: 90% of the cgroup's 1024 MiB.", 1)
	if err := p.Stop(waitLong); err != nil {
		t.Fatal(err)
	}

	p = inCgroup("--memory-limit-ratio=off")
	createKex(t, ns, objYAML(t))
	waitLog(t, p, "Handling cycle is finished", 1)
	assertCount(t, p, "Go's soft memory limit", 0)
}

// memoryCgroup makes a memory cgroup of limit bytes under the test process's
// own (cgroup v1 or v2) and removes it when the test ends, after the
// processes in it are gone.
func memoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	var dir, file string
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case dir == "" && parts[0] == "0" && parts[1] == "":
			dir, file = filepath.Join("/sys/fs/cgroup", parts[2]), "memory.max"
		case strings.Contains(","+parts[1]+",", ",memory,"):
			dir, file = filepath.Join("/sys/fs/cgroup/memory", parts[2]), "memory.limit_in_bytes"
		}
	}
	if dir == "" {
		t.Skip("the test process is in no memory cgroup")
	}
	cg := filepath.Join(dir, fmt.Sprintf("kopfgo-e2e-%d", os.Getpid()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Skipf("cannot make a memory cgroup here (not root, or a read-only cgroup file system): %v", err)
	}
	t.Cleanup(func() {
		if err := os.Remove(cg); err != nil {
			t.Errorf("removing the test's cgroup: %v", err)
		}
	})
	if err := os.WriteFile(filepath.Join(cg, file), []byte(fmt.Sprint(limit)), 0o644); err != nil {
		t.Skipf("cannot limit the memory of a cgroup here: %v", err)
	}
	return cg
}
