//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExample99AllAtOnce(t *testing.T) {
	ns := namespace(t)
	op := runOperator(t, "./examples/99-all-at-once", ns)
	// The startup handlers: one at once, one after 3 temporary failures;
	// nothing is served before both have succeeded.
	waitLog(t, op, "Serving ", 1)
	assertCount(t, op, "Starting in 1s...", 1)
	assertCount(t, op, "'startup_fn_simple' succeeded.", 1)
	for n := 3; n >= 1; n-- {
		assertCount(t, op, fmt.Sprintf("'startup_fn_retried' failed temporarily: Going to succeed in %ds", n), 1)
	}
	assertCount(t, op, "Starting retried...", 1)
	assertCount(t, op, "'startup_fn_retried' succeeded.", 1)
	obj := createKex(t, ns, objYAML(t))
	name := obj.GetName()

	waitLog(t, op, "Creation is processed: 3 succeeded; 0 failed.", 1)
	for _, id := range []string{"create_1", "create_2", "create_pod"} {
		assertCount(t, op, "Handler '"+id+"' succeeded.", 1)
	}
	assertCount(t, op, "Handler 'create_2' failed with an exception and will try again in 1 seconds: Whoops!", 1)
	waitLog(t, op, "This pod is special for us.", 1)
	got := waitKex(t, ns, name, "handled", handled)
	status := got.Object["status"].(map[string]any)
	if status["create_1"].(map[string]any)["job1-status"] != int64(100) || status["create_2"].(map[string]any)["job2-status"] != int64(100) {
		t.Errorf("status = %v", status)
	}
	eventually(t, waitShort, "the events about the object", func() (bool, error) {
		evs, err := kube(t).CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, err
		}
		var normal, warning bool
		for _, e := range evs.Items {
			normal = normal || e.Type == "Normal" && e.Reason == "AnyReason"
			warning = warning || e.Type == "Warning" && e.Reason == "SomeReason" && e.Message == "Cannot do something"
		}
		return normal && warning, nil
	})

	patchKex(t, ns, name, `{"spec":{"lst":[1,2]}}`)
	waitLog(t, op, "Handling the FIELD = <nil> -> [1 2]", 1)
	assertCount(t, op, "Handling the diff:", 1)

	deleteKex(t, ns, name)
	waitGone(t, ns, name)
	assertCount(t, op, "Handler 'delete' succeeded.", 1)

	// The cleanup handler runs on exit, and the exit waits for it.
	if err := op.Stop(waitShort); err != nil {
		t.Fatal(err)
	}
	assertCount(t, op, "Cleaning up in 3s...", 1)
	assertCount(t, op, "'cleanup_fn' succeeded.", 1)
}
