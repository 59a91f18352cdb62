package kopfgo_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestOptionsFitTheirHandlerKinds checks that options are typed per handler
// kind: testdata/options/fit uses each option where it fits and compiles;
// every line marked "misfit" in testdata/options/misfit is a compile error
// (Idle on a daemon, a cancellation option on a timer, …).
func TestSpawningOptionsFitTheirHandlerKinds(t *testing.T) {
	if out, err := exec.Command("go", "build", "-o", os.DevNull, "./testdata/options/fit").CombinedOutput(); err != nil {
		t.Fatalf("the fitting options do not compile: %v\n%s", err, out)
	}
	// -gcflags=-e: every error, not only the first ten.
	out, err := exec.Command("go", "build", "-gcflags=-e", "-o", os.DevNull, "./testdata/options/misfit").CombinedOutput()
	if err == nil {
		t.Fatal("the misfit options compile")
	}
	src, rerr := os.ReadFile("testdata/options/misfit/misfit.go")
	if rerr != nil {
		t.Fatal(rerr)
	}
	lines := strings.Split(string(src), "\n")
	marked := 0
	for i, line := range lines {
		if !strings.HasSuffix(line, "// misfit") {
			continue
		}
		marked++
		at := "misfit.go:" + strconv.Itoa(i+1) + ":"
		if !strings.Contains(string(out), at) {
			t.Errorf("line %d compiles but should not: %s", i+1, strings.TrimSpace(line))
		}
	}
	if marked < 10 {
		t.Fatalf("only %d misfit lines found", marked)
	}
}
