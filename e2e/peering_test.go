//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopfgo/kopfgo/e2e/cluster"
	"github.com/kopfgo/kopfgo/e2e/runner"
)

var peeringsGVR = schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfpeerings"}

// peeringCRDs applies the peering CRDs of deploy/crds (not the
// default objects of deploy/peering: cluster-wide operators of other tests would peer in
// them and stand by for each other).
func peeringCRDs(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "crds", "peering-crds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crds []string
	for _, d := range strings.Split(string(data), "\n---\n") {
		if strings.Contains(d, "kind: CustomResourceDefinition") {
			crds = append(crds, d)
		}
	}
	if len(crds) != 2 {
		t.Fatalf("deploy/crds/peering-crds.yaml has %d CRDs, want 2", len(crds))
	}
	if err := cluster.Shared(t).Apply(context.Background(), []byte(strings.Join(crds, "\n---\n"))); err != nil {
		t.Fatal(err)
	}
	// Operators decide on peering from discovery, which lags behind CRDs.
	eventually(t, waitShort, "discovery to show the peering resources", func() (bool, error) {
		list, err := kube(t).Discovery().ServerResourcesForGroupVersion("kopf.dev/v1")
		if err != nil {
			return false, nil
		}
		n := 0
		for _, r := range list.APIResources {
			if r.Name == "kopfpeerings" || r.Name == "clusterkopfpeerings" {
				n++
			}
		}
		return n == 2, nil
	})
}

// peeringStatus is the peering object's status: the peers' records.
func peeringStatus(t *testing.T, ns, name string) map[string]any {
	t.Helper()
	u, err := dyn(t).Resource(peeringsGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status, _ := u.Object["status"].(map[string]any)
	return status
}

// TestPeeringPriorities runs replicas of one operator in a KopfPeering, as
// Kopf's operators peer (compat: peering-resources, peering-priorities):
// only the one of the highest priority handles objects; when it is killed,
// the next takes over once its record has expired, and removes the dead
// record; peers of one priority all stand by; a record written in Kopf's
// format (as a Kopf operator writes it) is obeyed; --standalone peers with
// nobody. Each object's handlers succeed once.
func TestPeeringPriorities(t *testing.T) {
	peeringCRDs(t)
	ns := namespace(t)
	const name = "e2e"
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfPeering", "metadata": map[string]any{"name": name, "namespace": ns},
	}}
	eventually(t, waitShort, "the KopfPeering created", func() (bool, error) {
		_, err := dyn(t).Resource(peeringsGVR).Namespace(ns).Create(context.Background(), obj, metav1.CreateOptions{})
		return err == nil, nil // the CRD may still be establishing
	})

	bin := filepath.Join(t.TempDir(), "operator")
	build := exec.Command("go", "build", "-o", bin, "./e2e/operators/chaos/cmd")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	journal := filepath.Join(t.TempDir(), "journal")
	env := []string{"KOPFGO_CHAOS_JOURNAL=" + journal, "KOPFGO_CHAOS_PEERING_LIFETIME=5s"}
	replica := func(args ...string) *runner.Process {
		return startProcess(t, bin, append([]string{"run", "-n", ns, "--verbose", "--log-format=plain"}, args...), runner.Options{Dir: t.TempDir(), Env: env})
	}
	handledBy := func(i int) string {
		for _, f := range journalLines(t, journal) {
			if f[0] == "ret" && f[1] == "create" && f[2] == fmt.Sprintf("%s/kex-%02d", ns, i) {
				return f[4]
			}
		}
		return ""
	}
	create := func(from, to int) {
		for i := from; i < to; i++ {
			o := objYAML(t)
			o["metadata"].(map[string]any)["name"] = fmt.Sprintf("kex-%02d", i)
			createKex(t, ns, o)
		}
		for i := from; i < to; i++ {
			waitKex(t, ns, fmt.Sprintf("kex-%02d", i), "the creation handled", handled)
		}
	}
	keepalive := fmt.Sprintf("Keep-alive in %q in '%s': ok.", name, ns)
	keepalive = strings.ReplaceAll(keepalive, `"`, "'")

	high := replica("--peering", name, "--priority", "10")
	waitLog(t, high, keepalive, 1)
	low := replica("--peering", name, "--priority", "5")
	waitLog(t, low, "Pausing operations in favour of [<Peer ", 1)
	create(0, 3)
	for i := 0; i < 3; i++ {
		if by := handledBy(i); by != strconv.Itoa(high.Pid()) {
			t.Errorf("kex-%02d was handled by pid %s, not by the operator of the highest priority (%d)", i, by, high.Pid())
		}
	}

	// The leader dies: its record expires, the next takes over and
	// removes the dead record.
	before := len(peeringStatus(t, ns, name))
	high.Kill()
	waitLog(t, low, "Resuming operations after the pause.", 1)
	eventually(t, waitShort, "the dead peer's record removed", func() (bool, error) {
		return len(peeringStatus(t, ns, name)) == before-1, nil
	})
	create(3, 6)
	for i := 3; i < 6; i++ {
		if by := handledBy(i); by != strconv.Itoa(low.Pid()) {
			t.Errorf("kex-%02d was handled by pid %s, not by the surviving operator (%d)", i, by, low.Pid())
		}
	}

	// The same priority: both stand by, with Kopf's warning; when one
	// leaves (removing its record), the other serves again.
	twin := replica("--peering", name, "--priority", "5")
	waitLog(t, twin, "Pausing all operators, including self:", 1)
	waitLog(t, low, "Possibly conflicting operators with the same priority:", 1)
	waitLog(t, low, "Pausing all operators, including self:", 1)
	if err := twin.Stop(30 * time.Second); err != nil {
		t.Errorf("stopping the twin: %v", err)
	}
	waitLog(t, low, "Resuming operations after the pause.", 2)

	// A Kopf operator's record, written as Kopf writes it, is obeyed.
	kopfID := "kopf@laptop/20261124040000/xyz"
	lastseen := time.Now().UTC().Format("2006-01-02T15:04:05.000000") + "+00:00"
	rec := fmt.Sprintf(`{"status":{%q:{"priority":100,"lifetime":60,"lastseen":%q}}}`, kopfID, lastseen)
	if _, err := dyn(t).Resource(peeringsGVR).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(rec), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, low, "Pausing operations in favour of [<Peer "+kopfID+": priority=100, lifetime=60", 1)
	gone := fmt.Sprintf(`{"status":{%q:null}}`, kopfID)
	if _, err := dyn(t).Resource(peeringsGVR).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(gone), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, low, "Resuming operations after the pause.", 3)

	// kopfgo freeze writes a pseudo-peer that pauses the operator; an
	// object created meanwhile is handled once kopfgo resume removes it.
	kopfgo := func(args ...string) {
		t.Helper()
		out, err := exec.Command(kopfgoCLI(t), args...).CombinedOutput()
		if err != nil {
			t.Fatalf("kopfgo %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	kopfgo("freeze", "-P", name, "-n", ns, "-t", "60", "--id", "freezer")
	waitLog(t, low, "Pausing operations in favour of [<Peer freezer: priority=100, lifetime=60", 1)
	o := objYAML(t)
	o["metadata"].(map[string]any)["name"] = "kex-06"
	createKex(t, ns, o)
	if by := handledBy(6); by != "" {
		t.Errorf("kex-06 was handled by %s while the operators were frozen", by)
	}
	kopfgo("resume", "-P", name, "-n", ns, "--id", "freezer")
	waitLog(t, low, "Resuming operations after the pause.", 4)
	waitKex(t, ns, "kex-06", "the creation handled after the resume", handled)
	if by := handledBy(6); by != strconv.Itoa(low.Pid()) {
		t.Errorf("kex-06 was handled by pid %q, want the resumed operator %d", by, low.Pid())
	}

	// Standalone: no record, no keep-alive, and it serves regardless.
	records := slices.Sorted(func(yield func(string) bool) {
		for k := range peeringStatus(t, ns, name) {
			if !yield(k) {
				return
			}
		}
	})
	alone := replica("--standalone")
	waitLog(t, alone, "Serving kopfexamples", 1)
	if n := alone.Count("Keep-alive") + alone.Count("Peering resource") + alone.Count("<Peer "); n != 0 {
		t.Errorf("a standalone operator mentions peering %d times:\n%s", n, alone.Log())
	}
	after := slices.Sorted(func(yield func(string) bool) {
		for k := range peeringStatus(t, ns, name) {
			if !yield(k) {
				return
			}
		}
	})
	if !slices.Equal(records, after) {
		t.Errorf("a standalone operator changed the peering records: %v → %v", records, after)
	}

	// Peering without its object: Kopf's warning, and the operator serves
	// standalone.
	other := namespace(t)
	lone := startProcess(t, bin, []string{"run", "-n", other, "--verbose", "--log-format=plain"}, runner.Options{Dir: t.TempDir(), Env: env})
	waitLog(t, lone, fmt.Sprintf("Peering object 'default' in '%s' is not found, falling back to the standalone mode.", other), 1)
	waitLog(t, lone, "Starting the watch-stream for kopfexamples", 1)

	// Every object was created once, by one operator.
	rets := map[string]int{}
	for _, f := range journalLines(t, journal) {
		if f[0] == "ret" && f[1] == "create" {
			rets[f[2]]++
		}
	}
	for k, n := range rets {
		if n != 1 {
			t.Errorf("%s: create handler succeeded %d times, want once", k, n)
		}
	}
}
