//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/cluster"
)

// conditionOf returns the object's condition of the type, if any.
func conditionOf(u *unstructured.Unstructured, typ string) (map[string]any, bool) {
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, it := range list {
		if c, ok := it.(map[string]any); ok && c["type"] == typ {
			return c, true
		}
	}
	return nil, false
}

// hasCondition reports whether the object has the condition with the
// status and reason, observed at its current generation.
func hasCondition(u *unstructured.Unstructured, typ, status, reason string) bool {
	c, ok := conditionOf(u, typ)
	return ok && c["status"] == status && c["reason"] == reason && c["observedGeneration"] == u.GetGeneration()
}

// TestConditionsOnSuccess: a handler that returns no result (so that the
// pass has nothing else for the status subresource of KopfExamples) leaves
// Ready=True observed at the object's generation, and no Reconciling or
// Stalled. An update handled with success changes no condition's status:
// by default its news waits for the next status write (no request of its
// own), so Ready stays as it was; with Conditions.EveryPass it moves
// observedGeneration along and keeps lastTransitionTime.
func TestConditionsOnSuccess(t *testing.T) {
	for _, everyPass := range []bool{false, true} {
		t.Run(fmt.Sprintf("every-pass=%v", everyPass), func(t *testing.T) {
			ns := namespace(t)
			var updates atomic.Int32
			opts := kopfgo.Options{Namespaces: []string{ns}}
			opts.Settings.Persistence.Conditions.EveryPass = everyPass
			embeddedWith(t, opts, func(op *kopfgo.Operator) {
				op.On.Create("kopfexamples", func(context.Context, *kopfgo.Change) (any, error) { return nil, nil }, kopfgo.ID("create_fn"))
				op.On.Update("kopfexamples", func(context.Context, *kopfgo.Change) (any, error) { updates.Add(1); return nil, nil }, kopfgo.ID("update_fn"))
			})
			createKex(t, ns, objYAML(t))
			u := waitKex(t, ns, "kopf-example-1", "Ready=True", func(u *unstructured.Unstructured) bool {
				return handled(u) && hasCondition(u, "Ready", "True", "HandlersSucceeded")
			})
			ready, _ := conditionOf(u, "Ready")
			if ready["message"] != "Creation handled: 1 handler succeeded." || ready["observedGeneration"] != int64(1) {
				t.Errorf("Ready after the creation: %v", ready)
			}
			for _, typ := range []string{"Reconciling", "Stalled"} {
				if c, ok := conditionOf(u, typ); ok {
					t.Errorf("%s is on a handled object: %v", typ, c)
				}
			}

			patchKex(t, ns, "kopf-example-1", `{"spec":{"field":"changed"}}`)
			u = waitKex(t, ns, "kopf-example-1", "the update handled", func(u *unstructured.Unstructured) bool {
				return u.GetGeneration() == 2 && handled(u) && strings.Contains(u.GetAnnotations()[lhc], "changed") &&
					(!everyPass || hasCondition(u, "Ready", "True", "HandlersSucceeded"))
			})
			after, _ := conditionOf(u, "Ready")
			want := map[string]any{"message": "Creation handled: 1 handler succeeded.", "observedGeneration": int64(1)}
			if everyPass {
				want = map[string]any{"message": "Updating handled: 1 handler succeeded.", "observedGeneration": int64(2)}
			}
			if after["lastTransitionTime"] != ready["lastTransitionTime"] || after["status"] != "True" ||
				after["message"] != want["message"] || after["observedGeneration"] != want["observedGeneration"] {
				t.Errorf("Ready after the update: %v, want %v (before: %v; the time stays while the status does)", after, want, ready)
			}
			if n := updates.Load(); n != 1 {
				t.Errorf("the update handler ran %d times, want 1", n)
			}
		})
	}
}

// TestConditionsWhileRetrying: a handler that fails temporarily leaves
// Reconciling=True and Ready=False, reason HandlerRetrying, with its id
// and error; the same error on the next attempts leaves them as they are
// (no write of its own: the time and the message stay); once it succeeds,
// Ready=True and Reconciling is gone.
func TestConditionsWhileRetrying(t *testing.T) {
	ns := namespace(t)
	var fixed atomic.Bool
	var attempts atomic.Int32
	embedded(t, ns, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", func(ctx context.Context, c *kopfgo.Change) (any, error) {
			attempts.Add(1)
			if !fixed.Load() {
				return nil, kopfgo.TemporaryMsg("the database is not there yet", time.Second)
			}
			return map[string]any{"message": "done"}, nil
		}, kopfgo.ID("flaky"))
	})
	createKex(t, ns, objYAML(t))
	u := waitKex(t, ns, "kopf-example-1", "Reconciling=True, HandlerRetrying", func(u *unstructured.Unstructured) bool {
		return hasCondition(u, "Reconciling", "True", "HandlerRetrying") && hasCondition(u, "Ready", "False", "HandlerRetrying")
	})
	first, _ := conditionOf(u, "Reconciling")
	if want := "Handler 'flaky' is retrying: the database is not there yet"; first["message"] != want {
		t.Errorf("Reconciling's message is %q, want %q", first["message"], want)
	}
	at := attempts.Load()
	eventually(t, waitShort, "two more attempts", func() (bool, error) { return attempts.Load() >= at+2, nil })
	if again, _ := conditionOf(getKex(t, ns, "kopf-example-1"), "Reconciling"); again["lastTransitionTime"] != first["lastTransitionTime"] || again["message"] != first["message"] {
		t.Errorf("Reconciling changed between attempts failing alike: %v, then %v", first, again)
	}

	fixed.Store(true)
	u = waitKex(t, ns, "kopf-example-1", "Ready=True after the retries", func(u *unstructured.Unstructured) bool {
		return handled(u) && hasCondition(u, "Ready", "True", "HandlersSucceeded")
	})
	if c, ok := conditionOf(u, "Reconciling"); ok {
		t.Errorf("Reconciling is left after the success: %v", c)
	}
	if msg, _, _ := unstructured.NestedString(u.Object, "status", "flaky", "message"); msg != "done" {
		t.Errorf("the result beside the conditions: %q", msg)
	}
}

// TestConditionsOnPermanentFailure: a handler that fails permanently ends
// its cycle (the progress records are purged, as Kopf purges them) with
// Stalled=True and Ready=False, reason HandlerFailed, naming the handler
// and its error; kopfgo inspect reads the failure from there (failed, not
// done), and inspect --stuck exits non-zero.
func TestConditionsOnPermanentFailure(t *testing.T) {
	ns := namespace(t)
	embedded(t, ns, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", func(context.Context, *kopfgo.Change) (any, error) {
			return nil, kopfgo.Permanent(errors.New("the spec asks for the impossible"))
		}, kopfgo.ID("broken"))
	})
	createKex(t, ns, objYAML(t))
	u := waitKex(t, ns, "kopf-example-1", "Stalled=True, HandlerFailed", func(u *unstructured.Unstructured) bool {
		return handled(u) && hasCondition(u, "Stalled", "True", "HandlerFailed") && hasCondition(u, "Ready", "False", "HandlerFailed")
	})
	stalled, _ := conditionOf(u, "Stalled")
	if want := "Handler 'broken' failed for good: the spec asks for the impossible"; stalled["message"] != want {
		t.Errorf("Stalled's message is %q, want %q", stalled["message"], want)
	}

	o := inspectJSON(t, "kopfexamples", "-n", ns)["kopf-example-1"]
	if o.State != "failed" || !o.Stuck || len(o.Handlers) != 1 || o.Handlers[0].ID != "broken" || o.Handlers[0].State != "failed" ||
		o.Handlers[0].Message != "the spec asks for the impossible" || o.Handlers[0].Storage != "conditions" {
		t.Errorf("inspect after the cycle: %+v", o)
	}
	out, code := inspectExit(t, "kopfexamples", "-n", ns, "--stuck")
	if code != 3 || !strings.Contains(out, "broken") || !strings.Contains(out, "failed") {
		t.Errorf("inspect --stuck exited %d, want 3, with:\n%s", code, out)
	}
}

// inspectExit runs kopfgo inspect and returns its stdout and exit status.
func inspectExit(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(kopfgoCLI(t), append(append([]string{"inspect"}, args...), "--kubeconfig", cluster.Shared(t).Kubeconfig)...)
	cmd.Dir = repoRoot
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatalf("kopfgo inspect: %v\n%s", err, stderr.String())
	}
	return string(out), 0
}

// TestConditionsOffAndHandlersOwn: with Settings.Persistence.Conditions
// off, the framework writes none of its conditions (the object carries
// what Kopf would write), and a condition a handler sets is written all
// the same; with them on, a handler's condition and the framework's share
// the list, in one status write.
func TestConditionsOffAndHandlersOwn(t *testing.T) {
	nsOff, nsOn := namespace(t), namespace(t)
	synced := func(ctx context.Context, c *kopfgo.Change) (any, error) {
		if c.Name != "none" {
			c.SetCondition(metav1.Condition{Type: "Synced", Status: metav1.ConditionTrue, Reason: "UpstreamSynced", Message: "in sync with upstream"})
		}
		return nil, nil
	}
	opts := kopfgo.Options{Namespaces: []string{nsOff}}
	opts.Settings.Persistence.Conditions.Disabled = true
	embeddedWith(t, opts, func(op *kopfgo.Operator) { op.On.Create("kopfexamples", synced, kopfgo.ID("create_fn")) })
	embedded(t, nsOn, func(op *kopfgo.Operator) { op.On.Create("kopfexamples", synced, kopfgo.ID("create_fn")) })
	kex := func(name string) map[string]any {
		obj := objYAML(t)
		obj["metadata"].(map[string]any)["name"] = name
		return obj
	}
	createKex(t, nsOff, kex("none"))
	createKex(t, nsOff, kex("own"))
	createKex(t, nsOn, kex("both"))

	none := waitKex(t, nsOff, "none", "handled", handled)
	if list, ok, _ := unstructured.NestedSlice(none.Object, "status", "conditions"); ok {
		t.Errorf("conditions written with conditions off: %v", list)
	}
	own := waitKex(t, nsOff, "own", "the handler's condition", func(u *unstructured.Unstructured) bool {
		return handled(u) && hasCondition(u, "Synced", "True", "UpstreamSynced")
	})
	if list, _, _ := unstructured.NestedSlice(own.Object, "status", "conditions"); len(list) != 1 {
		t.Errorf("with conditions off, only the handler's: %v", list)
	}
	both := waitKex(t, nsOn, "both", "both conditions", func(u *unstructured.Unstructured) bool {
		return handled(u) && hasCondition(u, "Synced", "True", "UpstreamSynced") && hasCondition(u, "Ready", "True", "HandlersSucceeded")
	})
	if list, _, _ := unstructured.NestedSlice(both.Object, "status", "conditions"); len(list) != 2 {
		t.Errorf("with conditions on, the handler's and Ready: %v", list)
	}
}
