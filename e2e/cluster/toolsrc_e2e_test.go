//go:build e2e

package cluster

import (
	"os/exec"
	"strings"
	"testing"
)

// The servers build from the sources embedded in this package, written out
// under an empty cache, as they do in a user's module (where no kopfgo
// checkout is around). etcd stands for both: kube-apiserver builds the same
// way in minutes (make test-fresh builds both).
func TestEmbeddedSourcesBuildEtcd(t *testing.T) {
	t.Setenv(EnvCache, t.TempDir())
	t.Setenv(EnvToolsDir, "")
	t.Setenv(EnvEtcd, "")
	path, err := ensureTool(t.Context(), tools[0], t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), strings.TrimPrefix(EtcdVersion, "v")) {
		t.Fatalf("%s --version: %v\n%s", path, err, out)
	}
}
