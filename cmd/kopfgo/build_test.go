package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kopfgo/kopfgo/internal/testmod"
)

var update = flag.Bool("update", false, "rewrite deploy/ from kopfgo manifests")

// kopfgo build without -o names the binary after the module (not after the
// package, whose directory is usually right there: "file exists"), and
// stamps --version into it, which the operator's version command prints.
func TestBuildDefaultOutputAndVersion(t *testing.T) {
	_ = goTool(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := testmod.Write(t, root, "example.com/acme/widget-operator/v2", map[string]string{
		"widget/handlers.go": `package widget

import (
	"context"

	"github.com/kopfgo/kopfgo"
)

func init() { kopfgo.On.Create("kopfexamples", create) }

func create(ctx context.Context, c *kopfgo.Change) (any, error) { return nil, nil }
`,
	})
	t.Setenv("GOFLAGS", "-mod=readonly")
	t.Setenv("GOWORK", "off")
	code, _, stderr := execute(t, dir, "build", "./widget", "--version", "v2.3.4")
	if code != 0 {
		t.Fatalf("kopfgo build: %d %s", code, stderr)
	}
	bin := filepath.Join(dir, "widget-operator")
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() {
		t.Fatalf("no binary %s: %v", bin, err)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "widget-operator version v2.3.4 ") {
		t.Errorf("version: %q", out)
	}
	// The binary is stripped: no symbol table for go tool nm.
	if nm, err := exec.Command("go", "tool", "nm", bin).CombinedOutput(); err == nil || !bytes.Contains(nm, []byte("no symbols")) {
		t.Errorf("go tool nm: %v %.200s", err, nm)
	}
	// The same source twice: the same binary (-trimpath, no build time).
	first, _ := os.ReadFile(bin)
	if code, _, stderr := execute(t, dir, "build", "./widget", "--version", "v2.3.4", "-o", "again"); code != 0 {
		t.Fatalf("kopfgo build -o again: %d %s", code, stderr)
	}
	if second, _ := os.ReadFile(filepath.Join(dir, "again")); !bytes.Equal(first, second) {
		t.Error("two builds of one source differ")
	}
	// A directory of the default name: a message, not a rename error.
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = execute(t, dir, "build", "./widget")
	if code == 0 || !strings.Contains(stderr, "is a directory: name the binary with -o") {
		t.Errorf("code %d, stderr %q", code, stderr)
	}
	if code, _, stderr = execute(t, dir, "build", "./widget", "--platform", "linux/arm64"); code != 2 || !strings.Contains(stderr, "--platform is for images") {
		t.Errorf("--platform without an image: %d %q", code, stderr)
	}
}

// deploy/ is kopfgo manifests' output for examples/01-minimal; -update
// rewrites it.
func TestDeployInSync(t *testing.T) {
	_ = goTool(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	code, _, stderr := execute(t, root, "manifests", "./examples/01-minimal", "--image", "kopfgo-example:dev",
		"--name", "kopfgo-example", "--crd", "examples/crd.yaml", "--peering", "--out", out)
	if code != 0 {
		t.Fatalf("kopfgo manifests: %d %s", code, stderr)
	}
	deploy := filepath.Join(root, "deploy")
	generated := yamlFiles(t, out)
	if *update {
		for _, f := range yamlFiles(t, deploy) {
			if err := os.Remove(filepath.Join(deploy, f)); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range generated {
			data, _ := os.ReadFile(filepath.Join(out, f))
			if err := os.MkdirAll(filepath.Dir(filepath.Join(deploy, f)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(deploy, f), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	if got, want := strings.Join(yamlFiles(t, deploy), " "), strings.Join(generated, " "); got != want {
		t.Fatalf("deploy/ has %s, kopfgo manifests writes %s: go test ./cmd/kopfgo -run TestDeployInSync -update", got, want)
	}
	for _, f := range generated {
		want, _ := os.ReadFile(filepath.Join(out, f))
		got, _ := os.ReadFile(filepath.Join(deploy, f))
		if !bytes.Equal(got, want) {
			t.Errorf("deploy/%s is not what kopfgo manifests writes (go test ./cmd/kopfgo -run TestDeployInSync -update):\n%s", f, want)
		}
	}
}

// yamlFiles lists the YAML files under dir, relative to it.
func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, f := range listTree(t, dir) {
		if strings.HasSuffix(f, ".yaml") {
			out = append(out, f)
		}
	}
	return out
}
