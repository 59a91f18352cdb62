package kopfgo_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kopfgo/kopfgo/internal/testmod"
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
	src, err := os.ReadFile("testdata/storages/storages.go")
	if err != nil {
		t.Fatal(err)
	}
	dir := testmod.Write(t, root, "example.com/storages", map[string]string{"storages.go": string(src)})
	cmd := exec.Command("go", "vet", "./...")
	cmd.Dir = dir
	cmd.Env = testmod.Env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("custom storages outside the module do not compile: %v\n%s", err, out)
	}
}
