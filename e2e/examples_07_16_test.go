//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// The examples of filters, event handlers, sub-handlers and indices, run as
// `kopfgo run ./examples/NN-name` like the others in examples_test.go.

func TestExample07Subhandlers(t *testing.T) {
	ns := namespace(t)
	op := runOperator(t, "./examples/07-subhandlers", ns)
	obj := createKex(t, ns, objYAML(t))

	waitLog(t, op, "Creation is processed: 1 succeeded; 0 failed.", 1)
	for _, line := range []string{
		"=== Handling creation for item1. ===", "=== Handling creation for item2. ===",
		"Handler 'create_fn/item1' succeeded.", "Handler 'create_fn/item2' succeeded.",
		"Handler 'create_fn' succeeded.",
		// The parent ran item1 and came back for item2.
		"Handler 'create_fn' has unfinished sub-handlers. Will retry soon.",
	} {
		assertCount(t, op, line, 1)
	}
	got := waitKex(t, ns, obj.GetName(), "handled", handled)
	assertNoProgress(t, got)

	deleteKex(t, ns, obj.GetName())
	waitGone(t, ns, obj.GetName())
	waitLog(t, op, reallyDeleted(ns, obj.GetName()), 1)
	assertCount(t, op, "=== Handling creation for", 2)
}

func TestExample08Events(t *testing.T) {
	ns := namespace(t)
	op := runOperator(t, "./examples/08-events", ns)
	obj := createKex(t, ns, objYAML(t))
	name := obj.GetName()
	// ADDED, or null if the operator's initial listing already had it.
	waitLog(t, op, "Event received:", 1)
	if op.Count(`"type":"ADDED"`)+op.Count(`"type":null`) != 1 {
		t.Errorf("the first event is neither ADDED nor the listing:\n%s", op.Log())
	}
	patchKex(t, ns, name, `{"spec":{"field":"other"}}`)
	waitLog(t, op, `"type":"MODIFIED"`, 1)

	// Nothing is stored on the object: no progress, no diff-base, no
	// finalizer (compat: handlers-event).
	got := getKex(t, ns, name)
	for k := range got.GetAnnotations() {
		if strings.HasPrefix(k, "kopf.zalando.org/") {
			t.Errorf("annotation %s on an object of event handlers only", k)
		}
	}
	if len(got.GetFinalizers()) != 0 {
		t.Errorf("finalizers = %v, want none", got.GetFinalizers())
	}

	// A restart lists the object again: type null (compat: handlers-event-relist).
	if err := op.Stop(waitShort); err != nil {
		t.Fatal(err)
	}
	op2 := runOperator(t, "./examples/08-events", ns)
	waitLog(t, op2, `"type":null`, 1)
	deleteKex(t, ns, name)
	waitLog(t, op2, `"type":"DELETED"`, 1)
	// The DELETED event is the last; once normal_event_fn (registered after
	// event_fn_with_error) has succeeded for it, both handlers are done with
	// every event, and the stopped operator's log is complete.
	if err := op2.WaitUntil(context.Background(), waitShort, "the DELETED event handled", func() bool {
		return op2.Count("Handler 'normal_event_fn' succeeded.") >= op2.Count("Event received:")
	}); err != nil {
		t.Fatal(err)
	}
	if err := op2.Stop(waitShort); err != nil {
		t.Fatal(err)
	}
	// Every event reached both handlers; the failing one is logged and
	// ignored, never retried.
	for _, p := range []interface{ Count(string) int }{op, op2} {
		events := p.Count("Event received:")
		if events == 0 || p.Count("Handler 'normal_event_fn' succeeded.") != events ||
			p.Count("Handler 'event_fn_with_error' failed with an exception and will ignore it: Oops!") != events {
			t.Errorf("%d events, %d successes, %d ignored failures: want them equal", events,
				p.Count("Handler 'normal_event_fn' succeeded."), p.Count("Handler 'event_fn_with_error' failed"))
		}
	}
	assertCount(t, op2, `"type":"ADDED"`, 0)
	assertCount(t, op2, `"type":null`, 1)
}

func TestExample11FilteringHandlers(t *testing.T) {
	ns := namespace(t)
	op := runOperator(t, "./examples/11-filtering-handlers", ns)
	obj := createKex(t, ns, objYAML(t))
	name := obj.GetName()

	waitLog(t, op, "Creation is processed: 10 succeeded; 0 failed.", 1)
	for _, line := range []string{
		"Label is matching.", "Label is present.", "Label is absent.", "Label callback matching.",
		"Annotation is matching.", "Annotation is present.", "Annotation is absent.",
		"Filter satisfied.", "Field value is satisfied.", "Field presence is satisfied.",
	} {
		assertCount(t, op, "["+ns+"/"+name+"] "+line, 1)
	}
	for _, line := range []string{
		"Annotation callback mismatch.", "Filter not satisfied.",
		"Field value is not satisfied.", "Field presence is not satisfied.", "Field change is satisfied.",
	} {
		assertCount(t, op, line, 0)
	}

	// The field daemon runs while spec.field is "value" and stops when it
	// changes away.
	waitLog(t, op, "["+ns+"/"+name+"] Field daemon is satisfied.", 1)

	// A change to another value than the filter's: nothing runs.
	patchKex(t, ns, name, `{"spec":{"field":"other"}}`)
	waitHandledWith(t, ns, name, `"field":"other"`)
	waitLog(t, op, "["+ns+"/"+name+"] Daemon 'daemon_with_field/spec.field' has exited on request", 1)
	patchKex(t, ns, name, `{"spec":{"field":"value"}}`)
	waitHandledWith(t, ns, name, `"field":"value"`)
	assertCount(t, op, "Field change is satisfied.", 0)
	// value → changed: the update handler's OldValue and NewValue match.
	patchKex(t, ns, name, `{"spec":{"field":"changed"}}`)
	waitLog(t, op, "Field change is satisfied.", 1)

	deleteKex(t, ns, name)
	waitGone(t, ns, name)
	waitLog(t, op, reallyDeleted(ns, name), 1)
	assertCount(t, op, "Field change is satisfied.", 1)
	assertCount(t, op, "Label is matching.", 1)
}

func TestExample16Indexing(t *testing.T) {
	ns := namespace(t)
	for i := range 3 {
		createLabelledPod(t, ns, fmt.Sprintf("pod-%d", i), map[string]string{"app": "kopfgo-idx"})
	}
	port := freeTCPPort(t)
	// The timer reports the running pods of kube-system and default; here,
	// of the test's namespace.
	t.Setenv("RUNNING_PODS_NAMESPACES", ns)
	op := runOperator(t, "./examples/16-indexing", ns, "--liveness=http://127.0.0.1:"+port+"/healthz")
	obj := createKex(t, ns, objYAML(t))
	name := obj.GetName()

	// The probes report from the index (compat: indices-access).
	eventually(t, waitLong, "the probes' report of 3 pods", func() (bool, error) {
		code, raw, err := httpGet("http://127.0.0.1:" + port + "/healthz")
		if err != nil || code != 200 {
			return false, err
		}
		var body map[string]any
		if err := json.Unmarshal([]byte(raw), &body); err != nil {
			return false, err
		}
		return fmt.Sprint(body["pod_count"]) == "3" && fmt.Sprint(body["pod_names"]) == "[pod-0 pod-1 pod-2]", nil
	})

	running := func(u *unstructured.Unstructured) ([]string, bool) {
		pods, ok, _ := unstructured.NestedStringSlice(u.Object, "status", "running-pods")
		return pods, ok
	}
	waitKex(t, ns, name, "no running pods in status", func(u *unstructured.Unstructured) bool {
		pods, ok := running(u)
		return ok && len(pods) == 0
	})
	waitLog(t, op, "["+ns+"/"+name+"] Pods by label: app=kopfgo-idx: pod-0,pod-1,pod-2", 1)
	waitLog(t, op, "["+ns+"/"+name+"] Timer 'intervalled' succeeded.", 1)

	// A pod starts running (as a kubelet would report it), another goes;
	// the timer's next report shows both, from the indices.
	_, err := kube(t).CoreV1().Pods(ns).Patch(context.Background(), "pod-1", types.MergePatchType,
		[]byte(`{"status":{"phase":"Running"}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	deletePod(t, ns, "pod-2")
	waitKex(t, ns, name, "one running pod in status", func(u *unstructured.Unstructured) bool {
		pods, _ := running(u)
		return slices.Equal(pods, []string{ns + "::pod-1"})
	})
	waitLog(t, op, "["+ns+"/"+name+"] Pods by label: app=kopfgo-idx: pod-0,pod-1", 1)

	deleteKex(t, ns, name)
	waitGone(t, ns, name)
}
