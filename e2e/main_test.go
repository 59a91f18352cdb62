//go:build e2e

// Package e2e holds kopfgo's end-to-end tests: real operators against a real
// etcd and kube-apiserver started by package cluster.
package e2e

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/e2e/cluster"
)

// repoRoot is the kopfgo checkout, found from this file's location.
var repoRoot = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}()

func TestMain(m *testing.M) {
	cluster.Main(m, func(c *cluster.Cluster) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.ApplyFile(ctx, filepath.Join(repoRoot, "examples", "crd.yaml")); err != nil {
			os.Stderr.WriteString("cannot apply examples/crd.yaml: " + err.Error() + "\n")
			os.Exit(1)
		}
	})
}
