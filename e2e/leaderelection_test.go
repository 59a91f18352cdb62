//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopfgo/kopfgo/e2e/runner"
)

// journalLines reads the chaos operator's journal (e2e/operators/chaos):
// "EVENT KIND NS/NAME CHANGE PID" per line.
func journalLines(t *testing.T, path string) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out [][]string
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) == 5 {
			out = append(out, f)
		}
	}
	return out
}

// TestLeaderElectionOneReplicaServes: replicas of one operator with
// --leader-elect share a Lease; only its holder handles objects. A killed
// leader's Lease is taken once it expires; a leader stopped with SIGTERM
// releases it, and the next replica takes it at its next retry. Every
// object is created, updated and deleted with each handler succeeding once:
// no replica handles what another has handled (compat: replicas-leader-election).
func TestLeaderElectionOneReplicaServes(t *testing.T) {
	ns := namespace(t)
	bin := filepath.Join(t.TempDir(), "operator")
	build := exec.Command("go", "build", "-o", bin, "./e2e/operators/chaos/cmd")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	journal := filepath.Join(t.TempDir(), "journal")
	lease := "kopfgo-e2e-" + ns
	replica := func() *runner.Process {
		return startBinary(t, bin, []string{"KOPFGO_CHAOS_JOURNAL=" + journal}, "-n", ns,
			"--leader-elect", "--leader-elect-lease", lease, "--leader-elect-namespace", ns,
			"--leader-elect-lease-duration", "6s", "--leader-elect-renew-deadline", "4s", "--leader-elect-retry-period", "1s")
	}
	create := func(from, to int) {
		for i := from; i < to; i++ {
			obj := objYAML(t)
			obj["metadata"].(map[string]any)["name"] = fmt.Sprintf("kex-%02d", i)
			createKex(t, ns, obj)
		}
	}
	createdBy := func(i int) string {
		for _, f := range journalLines(t, journal) {
			if f[0] == "ret" && f[1] == "create" && f[2] == fmt.Sprintf("%s/kex-%02d", ns, i) {
				return f[4]
			}
		}
		return ""
	}
	// waitCreated waits until the objects' creation cycles are over and
	// recorded: a leader killed mid-cycle would leave its last handler to
	// run again (the at-least-once window, not what this test is about).
	waitCreated := func(from, to int) {
		for i := from; i < to; i++ {
			waitKex(t, ns, fmt.Sprintf("kex-%02d", i), "the creation handled", handled)
		}
	}

	a := replica()
	waitLog(t, a, "Became the leader of lease "+ns+"/"+lease, 1)
	b := replica()
	waitLog(t, b, "is held by", 1)
	create(0, 5)
	waitCreated(0, 5)
	pidA := strconv.Itoa(a.Pid())
	for i := 0; i < 5; i++ {
		if by := createdBy(i); by != pidA {
			t.Errorf("kex-%02d was created by pid %s, not by the leader %s", i, by, pidA)
		}
	}

	// SIGKILL: the Lease is taken once it has expired.
	killed := time.Now()
	a.Kill()
	waitLog(t, b, "Became the leader of lease "+ns+"/"+lease, 1)
	t.Logf("handover after SIGKILL: %s (lease duration 6s)", time.Since(killed).Round(100*time.Millisecond))
	create(5, 10)
	waitCreated(5, 10)
	pidB := strconv.Itoa(b.Pid())
	for i := 5; i < 10; i++ {
		if by := createdBy(i); by != pidB {
			t.Errorf("kex-%02d was created by pid %s, not by the new leader %s", i, by, pidB)
		}
	}

	// SIGTERM: the Lease is released, the next replica takes it at once.
	c := replica()
	waitLog(t, c, "is held by", 1)
	termed := time.Now()
	if err := b.Stop(30 * time.Second); err != nil {
		t.Errorf("stopping the leader: %v", err)
	}
	waitLog(t, b, "Released the lease "+ns+"/"+lease, 1)
	waitLog(t, c, "Became the leader of lease "+ns+"/"+lease, 1)
	t.Logf("handover after SIGTERM: %s (retry period 1s, lease duration 6s)", time.Since(termed).Round(100*time.Millisecond))

	for i := 0; i < 10; i++ {
		deleteKex(t, ns, fmt.Sprintf("kex-%02d", i))
	}
	for i := 0; i < 10; i++ {
		waitGone(t, ns, fmt.Sprintf("kex-%02d", i))
	}

	// Each handler succeeded once per object and change, and only the
	// leader of the moment ran handlers.
	pidC := strconv.Itoa(c.Pid())
	rets := map[string]int{}
	for _, f := range journalLines(t, journal) {
		if f[0] != "ret" || f[1] == "timer" || f[1] == "daemon" {
			continue
		}
		rets[f[1]+" "+f[2]+" "+f[3]]++
		if f[1] == "delete" && f[4] != pidC {
			t.Errorf("%s %s was deleted by pid %s, not by the leader %s", f[1], f[2], f[4], pidC)
		}
	}
	for k, n := range rets {
		if n != 1 {
			t.Errorf("%s succeeded %d times, want once", k, n)
		}
	}
	for i := 0; i < 10; i++ {
		if n := rets[fmt.Sprintf("delete %s/kex-%02d -", ns, i)]; n != 1 {
			t.Errorf("kex-%02d: delete handler succeeded %d times, want once", i, n)
		}
	}
	if l, err := kube(t).CoordinationV1().Leases(ns).Get(context.Background(), lease, metav1.GetOptions{}); err != nil {
		t.Errorf("the Lease: %v", err)
	} else if h := l.Spec.HolderIdentity; h == nil || !strings.Contains(c.Log(), *h) {
		t.Errorf("the Lease is held by %v, not by the last replica", h)
	}
}
