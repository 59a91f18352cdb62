//go:build e2e

package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/e2e/cluster"
)

// inspectCLI runs `kopfgo inspect ARGS... --kubeconfig K` and returns stdout.
func inspectCLI(t *testing.T, args ...string) string {
	t.Helper()
	return kopfgoIn(t, append(append([]string{"inspect"}, args...), "--kubeconfig", cluster.Shared(t).Kubeconfig)...)
}

type inspected struct {
	Name, State, Cause string
	Finalizer, Stuck   bool
	Pending            bool `json:"pendingChange"`
	Handlers           []struct {
		ID, State, Message, Storage string
		Retries                     int
	}
}

func inspectJSON(t *testing.T, args ...string) map[string]inspected {
	t.Helper()
	var objs []inspected
	out := inspectCLI(t, append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), &objs); err != nil {
		t.Fatalf("%v in:\n%s", err, out)
	}
	byName := map[string]inspected{}
	for _, o := range objs {
		byName[o.Name] = o
	}
	return byName
}

// TestInspectStates writes every state the way Kopf writes it (its
// annotation records, its legacy status records, its diff-base) and reads
// them back with kopfgo inspect, table and json.
func TestInspectStates(t *testing.T) {
	ns := namespace(t)
	future := time.Now().UTC().Add(90 * time.Second).Format("2006-01-02T15:04:05.000000")
	farFuture := time.Now().UTC().Add(3 * time.Hour).Format("2006-01-02T15:04:05.000000")
	started := time.Now().UTC().Add(-time.Minute).Format("2006-01-02T15:04:05.000000")
	record := func(extra string) string {
		return `{"started":"` + started + `","purpose":"create",` + extra + `}`
	}
	kex := func(name string, annotations map[string]any, finalizers ...any) map[string]any {
		meta := map[string]any{"name": name, "annotations": annotations}
		if len(finalizers) > 0 {
			meta["finalizers"] = finalizers
		}
		return map[string]any{"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": meta,
			"spec": map[string]any{"field": "value"}}
	}
	diffBase := `{"spec":{"field":"value"}}` + "\n"
	createKex(t, ns, kex("fresh", nil))
	createKex(t, ns, kex("done", map[string]any{"kopf.zalando.org/last-handled-configuration": diffBase}, "kopf.zalando.org/KopfFinalizerMarker"))
	createKex(t, ns, kex("changed", map[string]any{"kopf.zalando.org/last-handled-configuration": `{"spec":{"field":"old"}}` + "\n"}))
	createKex(t, ns, kex("running", map[string]any{"kopf.zalando.org/create_fn": record(`"retries":0,"success":false,"failure":false`)}))
	createKex(t, ns, kex("delayed", map[string]any{
		"kopf.zalando.org/create_fn": record(`"delayed":"` + future + `","retries":2,"success":false,"failure":false,"message":"not yet"`),
		"kopf.zalando.org/other_fn":  record(`"stopped":"` + started + `","retries":0,"success":true,"failure":false`),
	}))
	createKex(t, ns, kex("stuck", map[string]any{"kopf.zalando.org/create_fn": record(`"delayed":"` + farFuture + `","retries":5,"success":false,"failure":false`)}))
	createKex(t, ns, kex("failed", map[string]any{
		"kopf.zalando.org/create_fn": record(`"stopped":"` + started + `","retries":1,"success":false,"failure":true,"message":"Handler 'create_fn' failed permanently: boom"`),
		"kopf.zalando.org/next_fn":   record(`"delayed":"` + future + `","retries":1,"success":false,"failure":false`),
	}))
	legacy := createKex(t, ns, kex("legacy", nil))
	patchKex(t, ns, legacy.GetName(), `{"status":{"kopf":{"progress":{"create_fn":{"started":"`+started+`","purpose":"create","retries":1,"success":false,"failure":false}}}}}`, "status")

	got := inspectJSON(t, "kopfexamples", "-n", ns)
	want := map[string]struct {
		state, handler string
		stuck, pending bool
	}{
		"fresh":   {"fresh", "", false, false},
		"done":    {"done", "", false, false},
		"changed": {"changed", "", false, true},
		"running": {"in-progress", "create_fn=running", false, false},
		"delayed": {"delayed", "create_fn=delayed", false, false},
		"stuck":   {"delayed", "create_fn=delayed", true, false},
		"failed":  {"failed", "create_fn=failed", true, false},
		"legacy":  {"in-progress", "create_fn=retrying", false, false},
	}
	for name, w := range want {
		o, ok := got[name]
		if !ok {
			t.Errorf("%s: not in the output", name)
			continue
		}
		var hs []string
		for _, h := range o.Handlers {
			hs = append(hs, h.ID+"="+h.State)
		}
		if o.State != w.state || o.Stuck != w.stuck || o.Pending != w.pending || (w.handler != "" && !strings.Contains(strings.Join(hs, ","), w.handler)) {
			t.Errorf("%s: state %s stuck %v pending %v handlers %v, want %s stuck %v pending %v with %s", name, o.State, o.Stuck, o.Pending, hs, w.state, w.stuck, w.pending, w.handler)
		}
	}
	if !got["done"].Finalizer || got["fresh"].Finalizer {
		t.Errorf("finalizers: done %v fresh %v", got["done"].Finalizer, got["fresh"].Finalizer)
	}
	if h := got["legacy"].Handlers; len(h) != 1 || h[0].Storage != "status" || h[0].Retries != 1 {
		t.Errorf("legacy status record: %+v", h)
	}

	out, code := inspectExit(t, "kex", "-n", ns, "--stuck", "-o", "json")
	var stuck []inspected
	if err := json.Unmarshal([]byte(out), &stuck); err != nil {
		t.Fatalf("%v in:\n%s", err, out)
	}
	var names []string
	for _, o := range stuck {
		names = append(names, o.Name)
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "failed,stuck" || code != 3 {
		t.Errorf("--stuck lists %v and exits %d, want failed and stuck, and 3", names, code)
	}

	table := inspectCLI(t, "kopfexamples.kopf.dev", "delayed", "-n", ns)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAMESPACE") ||
		!strings.Contains(lines[1]+lines[2], "create_fn") || !strings.Contains(table, "not yet") || !strings.Contains(table, "(in ") {
		t.Errorf("table:\n%s", table)
	}
}

// TestInspectKopfgoOperator reads what a running kopfgo operator writes:
// a handler between retries, then the finished cycle.
func TestInspectKopfgoOperator(t *testing.T) {
	ns := namespace(t)
	p := runOperator(t, "./e2e/operators/retrying", ns)
	createKex(t, ns, objYAML(t))
	waitLog(t, p, "H2 CALLED retry=0", 1)
	eventually(t, waitShort, "inspect to show h2 delayed", func() (bool, error) {
		o := inspectJSON(t, "kopfexamples", "-n", ns)["kopf-example-1"]
		for _, h := range o.Handlers {
			if h.ID == "h2" && h.State == "delayed" && h.Message == "not yet" && o.State == "delayed" && o.Cause == "create" {
				return true, nil
			}
		}
		return false, nil
	})
	waitKex(t, ns, "kopf-example-1", "the cycle to finish", handled)
	if o := inspectJSON(t, "kopfexamples", "-A")["kopf-example-1"]; o.State != "done" || len(o.Handlers) != 0 || o.Finalizer {
		// Create handlers only: no finalizer is needed, and none is put.
		t.Errorf("after the cycle: %+v", o)
	}
}
