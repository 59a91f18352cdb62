package testmod

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := Write(t, root, "example.com/op", map[string]string{"op/op.go": "package op\n"})
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"module example.com/op\n", "require github.com/kopfgo/kopfgo v0.0.0", "replace github.com/kopfgo/kopfgo => " + root} {
		if !strings.Contains(string(mod), want) {
			t.Errorf("go.mod lacks %q:\n%s", want, mod)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "op", "op.go")); err != nil {
		t.Error(err)
	}
	// The go command accepts it as it is: nothing to add to go.mod.
	cmd := exec.Command("go", "list", "-m", "github.com/kopfgo/kopfgo")
	cmd.Dir, cmd.Env = dir, Env()
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "=> "+root) {
		t.Errorf("go list -m: %v\n%s", err, out)
	}
}
