package kopfgo

import (
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"runtime/debug"

	"github.com/kopfgo/kopfgo/internal/memlimit"
)

// rootFS is the file system's "/", where the cgroup files are.
var rootFS = os.DirFS("/")

// applyMemoryLimit gives Go's garbage collector a soft limit of ratio times
// the memory limit of the process's cgroup (Settings.Process.MemoryLimitRatio),
// unless ratio is negative, GOMEMLIMIT or the program has set a limit
// already, or no cgroup limits the memory. root is the file system's "/".
// It returns the limit set, or 0.
func applyMemoryLimit(root fs.FS, ratio float64, logger *slog.Logger) int64 {
	if ratio <= 0 {
		return 0
	}
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		logger.Debug(fmt.Sprintf("Go's soft memory limit is GOMEMLIMIT=%s; the cgroup's limit is not looked at.", v))
		return 0
	}
	if current := debug.SetMemoryLimit(-1); current != math.MaxInt64 {
		logger.Debug(fmt.Sprintf("Go's soft memory limit is already %s; the cgroup's limit is not looked at.", mib(current)))
		return 0
	}
	limit, err := memlimit.Limit(root)
	if err != nil {
		logger.Warn(fmt.Sprintf("Go's soft memory limit is not set: %v. Set GOMEMLIMIT to give one.", err))
		return 0
	}
	if limit == 0 {
		logger.Debug("No cgroup limits the memory: Go's soft memory limit is not set.")
		return 0
	}
	goal := int64(float64(limit) * min(ratio, 1))
	debug.SetMemoryLimit(goal)
	logger.Info(fmt.Sprintf("Go's soft memory limit is %s: %.0f%% of the cgroup's %s.", mib(goal), 100*min(ratio, 1), mib(limit)))
	return goal
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }
