//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Example 12: a program runs two operators in goroutines, does its own work
// (creates and deletes three objects) while they handle it, stops them and
// exits 0.
func TestExample12Embedded(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", "./examples/12-embedded", "-n", ns)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./examples/12-embedded: %v\n%s", err, out)
	}
	log := string(out)
	for _, want := range []string{
		"Starting the main app.",
		"Do the main app activity here. Step 3/3.",
		"Hello, kopf-example-0!", "Good bye, kopf-example-0!",
		"Hello, kopf-example-2!", "Good bye, kopf-example-2!",
		"The observer has seen ADDED kopf-example-1.",
		"[" + ns + "/kopf-example-1] Creation is in progress:",
		"Exiting the main app.",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("no %q in:\n%s", want, log)
		}
	}
}

// Example 09: its own tests, unit and end to end (a cluster of their own,
// kopfgotest.Run), pass.
func TestExample09Testing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-tags", "e2e", "-count=1", "-v", "./examples/09-testing")
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test ./examples/09-testing: %v\n%s", err, out)
	}
	for _, want := range []string{"--- PASS: TestResourceLifecycle", "--- PASS: TestCreateFnLogs"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}
