package kopfgo

import (
	"bytes"
	"log/slog"
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"testing/fstest"
)

// A cgroup v2 limit of 512 MiB with the default ratio gives Go a soft limit
// of 90% of it, said at INFO; a limit already set (as GOMEMLIMIT would) or a
// negative ratio leaves Go's alone.
func TestMemoryLimitFromTheCgroup(t *testing.T) {
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Skip("this test process runs with a Go memory limit (GOMEMLIMIT): the operator rightly leaves it alone")
	}
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetMemoryLimit(math.MaxInt64)
	root := fstest.MapFS{
		"proc/self/cgroup":         {Data: []byte("0::/\n")},
		"proc/self/mountinfo":      {Data: []byte("30 24 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")},
		"sys/fs/cgroup/memory.max": {Data: []byte("536870912\n")},
	}
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))

	if got := applyMemoryLimit(root, -1, logger); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Fatalf("a negative ratio set a limit: %d", got)
	}
	ratio := 0.9
	want := int64(ratio * float64(512<<20))
	if got := applyMemoryLimit(root, 0.9, logger); got != want || debug.SetMemoryLimit(-1) != want {
		t.Fatalf("limit = %d (Go's: %d), want %d", got, debug.SetMemoryLimit(-1), want)
	}
	if !strings.Contains(log.String(), "Go's soft memory limit is 461 MiB: 90% of the cgroup's 512 MiB.") {
		t.Errorf("no INFO line about the limit:\n%s", log.String())
	}
	// Set once, it is not set again (the program's own or GOMEMLIMIT's
	// limit wins the same way).
	root["sys/fs/cgroup/memory.max"] = &fstest.MapFile{Data: []byte("1073741824\n")}
	if got := applyMemoryLimit(root, 0.9, logger); got != 0 || debug.SetMemoryLimit(-1) != want {
		t.Errorf("an existing limit was replaced: %d", debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "100MiB")
	if got := applyMemoryLimit(root, 0.9, logger); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("GOMEMLIMIT was overridden")
	}
	t.Setenv("GOMEMLIMIT", "")
	root["sys/fs/cgroup/memory.max"] = &fstest.MapFile{Data: []byte("max\n")}
	if got := applyMemoryLimit(root, 0.9, logger); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("a limit was set without a cgroup limit")
	}
	root["sys/fs/cgroup/memory.max"] = &fstest.MapFile{Data: []byte("lots\n")}
	log.Reset()
	applyMemoryLimit(root, 0.9, logger)
	if !strings.Contains(log.String(), `level=WARN msg="Go's soft memory limit is not set: the memory limit in /sys/fs/cgroup/memory.max is \"lots\"`) {
		t.Errorf("an unreadable limit is not warned about:\n%s", log.String())
	}
}
