package diffbase

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The package must stay pure and low in the layering (DESIGN.md: imports
// point down only): no kopfgo package above it, no API client, no network,
// no logging. The rule is checked here rather than trusted.
func TestDependencies(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to list dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := []string{
		"github.com/kopfgo/kopfgo/internal/conventions",
		"github.com/kopfgo/kopfgo/internal/dicts",
		"github.com/kopfgo/kopfgo/patch",
		"github.com/kopfgo/kopfgo/internal/unjson",
		"github.com/kopfgo/kopfgo/diffbase",
		"golang.org/x/crypto/blake2b", // annotation key hashing, via conventions
		"golang.org/x/sys/cpu",
	}
	forbidden := []string{"net", "log", "log/slog", "os/exec", "os/signal", "k8s.io/", "go.uber.org/"}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasPrefix(dep, f+"/") || (strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f)) {
				t.Errorf("forbidden dependency %s", dep)
			}
		}
		if strings.Contains(strings.SplitN(dep, "/", 2)[0], ".") && !slices.Contains(allowed, dep) {
			t.Errorf("unexpected non-standard dependency %s", dep)
		}
	}
}
