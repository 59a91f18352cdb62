//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/e2e/chaos"
)

// The short chaos run of make test: 200 objects through creation, an update
// and deletion while the operator is killed, terminated and cut off from a
// restarting API server and etcd, with every invariant of make chaos
// checked (e2e/chaos; make chaos runs 3000). The first 100 exist before the
// operator starts, which is SIGKILLed amid that backlog (make chaos: 2000).
func TestChaos(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	rep, err := chaos.Run(ctx, chaos.Config{N: 200, Backlog: 100, FaultEvery: 2 * time.Second, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	rep.Print(&table)
	t.Logf("\n%s", table.String())
	if dir := os.Getenv("KOPFGO_CHAOS_JSON_DIR"); dir != "" {
		if err := rep.WriteJSON(filepath.Join(dir, "chaos-short.json")); err != nil {
			t.Error(err)
		}
	}
	for _, f := range rep.Failures {
		t.Error(f)
	}
}
