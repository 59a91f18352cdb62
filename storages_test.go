package kopfgo_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoragesOutsideTheModule builds testdata/storages, a progress storage
// and a diff-base storage plugged into an operator's settings, as a module
// of its own that requires kopfgo: outside the module, Go forbids importing
// kopfgo's internal packages, so this compiles only while the storage
// interfaces take public types (compat: persistence-custom-storages).
func TestStoragesOutsideTheModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	gosum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("testdata/storages/storages.go")
	if err != nil {
		t.Fatal(err)
	}
	// kopfgo's own requirements, so that the build needs nothing that is
	// not already in the module cache.
	mod := strings.Replace(string(gomod), "module github.com/kopfgo/kopfgo", "module example.com/storages", 1) +
		"\nrequire github.com/kopfgo/kopfgo v0.0.0\n\nreplace github.com/kopfgo/kopfgo => " + root + "\n"
	dir := t.TempDir()
	for name, data := range map[string][]byte{"go.mod": []byte(mod), "go.sum": gosum, "storages.go": src} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "vet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("custom storages outside the module do not compile: %v\n%s", err, out)
	}
}
