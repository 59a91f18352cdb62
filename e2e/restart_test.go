//go:build e2e

package e2e

import (
	"encoding/json"
	"regexp"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Killing the operator (SIGKILL) between retries loses nothing: after a
// restart, the finished handler does not run again and the retried one
// continues from its persisted retry count and start time (compat: persistence-restarts).
func TestKillBetweenRetriesResumesFromPersistedProgress(t *testing.T) {
	ns := namespace(t)
	op := runOperator(t, "./e2e/operators/retrying", ns)
	obj := createKex(t, ns, objYAML(t))

	waitLog(t, op, "H2 CALLED retry=0", 1)
	waitKex(t, ns, obj.GetName(), "h2's record with one retry", func(u *unstructured.Unstructured) bool {
		var rec map[string]any
		raw := u.GetAnnotations()["kopf.zalando.org/h2"]
		return json.Unmarshal([]byte(raw), &rec) == nil && rec["retries"] == float64(1)
	})
	op.Kill()
	if op.Count("H2 CALLED retry=1") != 0 {
		t.Skip("the operator reached the second attempt before it was killed; the machine is too slow for this scenario")
	}
	first := regexp.MustCompile(`H2 CALLED retry=0 started=(\S+)`).FindStringSubmatch(op.Log())

	op2 := runOperator(t, "./e2e/operators/retrying", ns)
	waitLog(t, op2, "Creation is processed: 2 succeeded; 0 failed.", 1)
	assertCount(t, op2, "H1 CALLED", 0)
	assertCount(t, op2, "H2 CALLED retry=0", 0)
	assertCount(t, op2, "H2 CALLED retry=1", 1)
	assertCount(t, op2, "H2 CALLED retry=2", 1)
	if first == nil || op2.Count("started="+first[1]) != 2 {
		t.Errorf("the restarted operator's attempts do not carry the first start time %v", first)
	}
	u := waitKex(t, ns, obj.GetName(), "handled", handled)
	if u.Object["status"].(map[string]any)["h2"] != "done" {
		t.Errorf("status.h2 = %v", u.Object["status"])
	}
}
