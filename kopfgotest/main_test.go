package kopfgotest_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kopfgo/kopfgo/kopfgotest"
)

// The package's own tests run under Main, as a user's would: its unit
// tests must not start a cluster.
func TestMain(m *testing.M) { kopfgotest.Main(m, nil) }

// TestClusterHelperProcess is not a test: TestOnlyClusterTestsStartTheCluster
// runs the test binary with it, in an environment of its own.
func TestClusterHelperProcess(t *testing.T) {
	if os.Getenv("KOPFGO_TEST_CLUSTER_HELPER") != "1" {
		t.Skip("a helper process of TestOnlyClusterTestsStartTheCluster")
	}
	kopfgotest.Cluster(t)
}

// fakeServer records each start of a server in $KOPFGO_TEST_STARTS and
// fails, as a server that cannot run would.
const fakeServer = "#!/bin/sh\necho \"$0\" >> \"$KOPFGO_TEST_STARTS\"\nexit 1\n"

func TestOnlyClusterTestsStartTheCluster(t *testing.T) {
	dir := t.TempDir()
	starts := filepath.Join(dir, "starts")
	var env []string
	for _, name := range []string{"etcd", "kube-apiserver"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(fakeServer), 0o755); err != nil {
			t.Fatal(err)
		}
		env = append(env, "KOPFGO_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_"))+"="+path)
	}
	env = append(env, "KOPFGO_TEST_STARTS="+starts, "KOPFGO_TEST_CLUSTER_HELPER=1", "KOPFGO_CACHE="+filepath.Join(dir, "cache"))

	run := func(pattern string, extra ...string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run="+pattern, "-test.v")
		cmd.Env = append(append(os.Environ(), env...), extra...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// Unit tests only: nothing starts.
	if out, err := run("^TestNew"); err != nil || !strings.Contains(out, "--- PASS: TestNewChange") {
		t.Fatalf("the unit tests: %v\n%s", err, out)
	}
	if data, err := os.ReadFile(starts); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a unit-only run started servers: %q (%v)", data, err)
	}

	// A test that asks for the cluster starts it (here, fails to).
	out, err := run("^TestClusterHelperProcess$")
	if err == nil || !strings.Contains(out, "cannot start the test cluster") {
		t.Fatalf("a cluster test with servers that cannot run: %v\n%s", err, out)
	}
	if data, _ := os.ReadFile(starts); !bytes.Contains(data, []byte("etcd")) {
		t.Fatalf("the cluster test started no server: %q", data)
	}
}

// Servers missing and a timeout too short for their build: the test that
// asks for the cluster fails at once, naming the command that builds them,
// and no build starts.
func TestNoBuildWithoutTimeForIt(t *testing.T) {
	cache := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestClusterHelperProcess$", "-test.v", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), "KOPFGO_TEST_CLUSTER_HELPER=1", "KOPFGO_CACHE="+cache, "KOPFGO_ETCD=", "KOPFGO_KUBE_APISERVER=")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the cluster test passed without servers:\n%s", out)
	}
	for _, want := range []string{"no time to build the test servers", "kube-apiserver", "\tkopfgo testenv\n", "go run github.com/kopfgo/kopfgo/cmd/kopfgo testenv"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the failure lacks %q:\n%s", want, out)
		}
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("the cache has %v: a build began", entries)
	}
}
