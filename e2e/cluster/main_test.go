//go:build !e2e

package cluster

import (
	"testing"

	"go.uber.org/goleak"
)

// The unit tests must not leave goroutines behind (the lock poller, process
// reapers). The e2e tests do not run under this check: client-go keeps idle
// connections and watch goroutines that are not this package's to manage.
func TestMain(m *testing.M) {
	// The spawner goroutine lives as long as the process, by design.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/kopfgo/kopfgo/e2e/cluster.spawner"))
}
