//go:build e2e

package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Each example is run as `kopfgo run ./examples/NN-name`, the demo object is
// created and deleted, and the operator's log lines are counted, the way
// Kopf's own e2e suite checks its examples.

func TestExample01Minimal(t *testing.T) {
	ns := namespace(t)
	op := runOperator(t, "./examples/01-minimal", ns)
	obj := createKex(t, ns, objYAML(t))

	waitLog(t, op, "Creation is processed: 1 succeeded; 0 failed.", 1)
	assertCount(t, op, "Handler 'create_fn' succeeded.", 1)
	assertCount(t, op, "And here we are! Creating: map[duration:1m field:value items:[item1 item2]]", 1)
	got := waitKex(t, ns, obj.GetName(), "the result in status", handled)
	if msg, _, _ := unstructured.NestedString(got.Object, "status", "create_fn", "message"); msg != "hello world" {
		t.Errorf("status.create_fn.message = %q, want hello world", msg)
	}
	if len(got.GetFinalizers()) != 0 {
		t.Errorf("finalizers = %v, want none: there are no delete handlers", got.GetFinalizers())
	}
	assertNoProgress(t, got)

	// The deletion does not run the creation handler again: checked once
	// the operator has seen the object gone.
	deleteKex(t, ns, obj.GetName())
	waitGone(t, ns, obj.GetName())
	waitLog(t, op, reallyDeleted(ns, obj.GetName()), 1)
	assertCount(t, op, "Handler 'create_fn' succeeded.", 1)
}

func TestExample02Children(t *testing.T) {
	ns := namespace(t)
	op := runOperator(t, "./examples/02-children", ns)
	obj := createKex(t, ns, objYAML(t))

	waitLog(t, op, "Creation is processed: 1 succeeded; 0 failed.", 1)
	assertCount(t, op, "Handler 'create_fn' succeeded.", 1)
	pods, err := kube(t).CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("%d pods, want the 1 child", len(pods.Items))
	}
	// Adopted (compat: hierarchies-adopt): owned by the KopfExample as its controller, named
	// after it, with its labels.
	pod := pods.Items[0]
	if refs := pod.OwnerReferences; len(refs) != 1 || refs[0].UID != obj.GetUID() || refs[0].Kind != "KopfExample" ||
		refs[0].Controller == nil || !*refs[0].Controller || refs[0].BlockOwnerDeletion == nil || !*refs[0].BlockOwnerDeletion {
		t.Errorf("pod owner references = %+v, want the KopfExample %s as the controller", refs, obj.GetUID())
	}
	if !regexp.MustCompile(`^kopf-example-1-[a-z0-9]{5}$`).MatchString(pod.Name) || pod.Labels["somelabel"] != "somevalue" {
		t.Errorf("pod %s with labels %v, want it named after its parent, with the parent's labels", pod.Name, pod.Labels)
	}
	assertCount(t, op, "Pod child is created: "+pod.Name, 1)
	got := waitKex(t, ns, obj.GetName(), "the result in status", handled)
	children, _, _ := unstructured.NestedStringSlice(got.Object, "status", "create_fn", "children")
	if len(children) != 1 || children[0] != string(pod.UID) {
		t.Errorf("status.create_fn.children = %v, want [%s]", children, pod.UID)
	}

	deleteKex(t, ns, obj.GetName())
	waitGone(t, ns, obj.GetName())
}

func TestExample03Exceptions(t *testing.T) {
	ns := namespace(t)
	op := runOperator(t, "./examples/03-exceptions", ns)
	obj := createKex(t, ns, objYAML(t))

	waitLog(t, op, "Creation is processed: 1 succeeded; 3 failed.", 1)
	for line, n := range map[string]int{
		"Handler 'instant_failure_with_only_a_message' failed permanently: Fail once and for all.":                                                                                            1,
		"Handler 'eventual_success_with_a_few_messages' failed temporarily: Expected recoverable error.":                                                                                      3,
		"Handler 'eventual_success_with_a_few_messages' succeeded.":                                                                                                                           1,
		"Handler 'eventual_failure_with_tracebacks' failed with an exception and will try again in 1 seconds: ":                                                                               2,
		"Handler 'eventual_failure_with_tracebacks' failed with an exception and will stop now (it would exceed 3 retries on the next attempt): An error that is supposed to be recoverable.": 1,
		"Handler 'instant_failure_with_traceback' failed with an exception and will stop now: An error that is supposed to be recoverable.":                                                   1,
		"Handler 'instant_failure_with_traceback' is invoked.":                                                                                                                                1,
	} {
		// A final failure's line is also the message of its progress
		// record, in a "Patching with: ..." line: not counted.
		got := 0
		for _, l := range op.Lines() {
			if strings.Contains(l, line) && !strings.Contains(l, "Patching with: ") {
				got++
			}
		}
		if got != n {
			t.Errorf("%d log lines contain %q, want %d", got, line, n)
		}
	}
	// The diff-base is stored even though handlers failed: the next change
	// is an update, not a creation again (compat: errors-permanent).
	got := waitKex(t, ns, obj.GetName(), "the diff-base and no progress", handled)
	assertNoProgress(t, got)

	deleteKex(t, ns, obj.GetName())
	waitGone(t, ns, obj.GetName())
}

func TestExample05Handlers(t *testing.T) {
	ns := namespace(t)
	op := runOperator(t, "./examples/05-handlers", ns)
	obj := createKex(t, ns, objYAML(t))
	name := obj.GetName()

	waitLog(t, op, "Creation is processed: 3 succeeded; 0 failed.", 1)
	for _, line := range []string{"CREATED 1st", "CREATED 2nd", "Handler 'create_fn_1' succeeded.", "Handler 'create_fn_2' succeeded.", "FIELD CHANGED: <nil> -> value"} {
		assertCount(t, op, line, 1)
	}
	if fin := waitKex(t, ns, name, "handled", handled).GetFinalizers(); len(fin) != 1 || fin[0] != "kopf.zalando.org/KopfFinalizerMarker" {
		t.Errorf("finalizers = %v, want Kopf's finalizer for the delete handlers", fin)
	}

	// A spec change: one update and one field handler call.
	patchKex(t, ns, name, `{"spec":{"field":"other"}}`)
	waitLog(t, op, "Updating is processed: 2 succeeded; 0 failed.", 1)
	assertCount(t, op, "UPDATED", 1)
	assertCount(t, op, "FIELD CHANGED: value -> other", 1)

	// A status change is not a change of the object.
	patchKex(t, ns, name, `{"status":{"extra":"x"}}`, "status")
	// A label change is: the update handler runs, the field handler does not.
	patchKex(t, ns, name, `{"metadata":{"labels":{"newlabel":"yes"}}}`)
	waitLog(t, op, "Updating is processed: 1 succeeded; 0 failed.", 1)
	assertCount(t, op, "UPDATED", 2)
	assertCount(t, op, "FIELD CHANGED", 2)

	// A restart resumes the object once.
	if err := op.Stop(waitShort); err != nil {
		t.Fatal(err)
	}
	op2 := runOperator(t, "./examples/05-handlers", ns)
	waitLog(t, op2, "Resuming is processed: 2 succeeded; 0 failed.", 1)
	assertCount(t, op2, "RESUMED 1st", 1)
	assertCount(t, op2, "RESUMED 2nd", 1)
	assertCount(t, op2, "CREATED", 0)

	deleteKex(t, ns, name)
	waitGone(t, ns, name)
	waitLog(t, op2, "Deletion is processed: 2 succeeded; 0 failed.", 1)
	assertCount(t, op2, "DELETED 1st", 1)
	assertCount(t, op2, "DELETED 2nd", 1)
	assertCount(t, op2, "RESUMED", 2)
}

// assertNoProgress checks that no per-handler progress is left on a handled
// object: records live only while their handlers are pending.
func assertNoProgress(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	for k := range u.GetAnnotations() {
		if k != "kopf.zalando.org/last-handled-configuration" && len(k) > len("kopf.zalando.org/") && k[:len("kopf.zalando.org/")] == "kopf.zalando.org/" {
			t.Errorf("progress annotation %s left on a handled object", k)
		}
	}
}
