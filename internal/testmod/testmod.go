// Package testmod writes modules of kopfgo's users for the tests that build
// one: a module that requires this checkout of kopfgo, as a user's module
// requires a release. Its go.mod repeats kopfgo's own requirements and
// go.sum, so its build list is kopfgo's and the go command never needs to
// change either file. Modules missing from the module cache (a fresh
// machine) are fetched through the module proxy, as for a user: a test
// must not depend on what a cache happens to hold.
package testmod

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Write writes the module named module, with files (path: content), into a
// temporary directory and returns it. root is this checkout's directory.
func Write(t testing.TB, root, module string, files map[string]string) string {
	t.Helper()
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gosum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	mod, ok := strings.CutPrefix(string(gomod), "module github.com/kopfgo/kopfgo\n")
	if !ok {
		t.Fatalf("%s/go.mod does not start with kopfgo's module line", root)
	}
	mod = "module " + module + "\n" + mod +
		"\nrequire github.com/kopfgo/kopfgo v0.0.0\n\nreplace github.com/kopfgo/kopfgo => " + root + "\n"
	dir := t.TempDir()
	all := map[string]string{"go.mod": mod, "go.sum": string(gosum)}
	for name, content := range files {
		all[name] = content
	}
	for name, content := range all {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Vars are the variables to run the go command in such a module with:
// outside any workspace, and never rewriting go.mod or go.sum.
var Vars = []string{"GOWORK=off", "GOFLAGS=-mod=readonly"}

// Env is this process's environment with Vars.
func Env() []string { return append(os.Environ(), Vars...) }
