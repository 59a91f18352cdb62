//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// (compat: events-post, events-shortcuts): Kopf's 04-events example posts four events.
func TestExample04Events(t *testing.T) {
	ns := namespace(t)
	op := runOperator(t, "./examples/04-events", ns)
	obj := createKex(t, ns, objYAML(t))

	waitLog(t, op, "Creation is processed: 1 succeeded; 0 failed.", 1)
	assertCount(t, op, "Handler 'create_fn' succeeded.", 1)
	evs := waitEvents(t, ns, string(obj.GetUID()), 4)
	want := []string{
		"Error/SomeReason/Some exception: Exception text.",
		"Normal/SomeReason/Some message",
		"SomeType/SomeReason/Some message",
		"Warning/SomeReason/Some message",
	}
	if got := summary(evs); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events:\n got %q\nwant %q", got, want)
	}
	for _, e := range evs {
		if e.Source.Component != "kopf" || e.InvolvedObject.Name != obj.GetName() {
			t.Errorf("event %s/%s from %q about %q", e.Type, e.Reason, e.Source.Component, e.InvolvedObject.Name)
		}
	}
	assertCount(t, op, "Failed to post an event", 0)

	deleteKex(t, ns, obj.GetName())
	waitGone(t, ns, obj.GetName())
}

func createPod(t *testing.T, ns string) *corev1.Pod {
	t.Helper()
	pod, err := kube(t).CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "kopf-pod-"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "the-only-one", Image: "busybox", Command: []string{"sh", "-x", "-c", "sleep 1"},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

func waitPodGone(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, waitShort, "pod "+name+" to be gone", func() (bool, error) {
		_, err := kube(t).CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

// Kopf's 10-builtins example on pods. The local cluster has no scheduler
// or kubelet: the pods stay Pending, which does not matter to the operator.
// A pod deleted before its time has its killing cancelled (as in Kopf's
// test); a pod found at startup is resumed and, with POD_TTL=1s, killed.
func TestExample10Builtins(t *testing.T) {
	ns := namespace(t)
	op := runOperator(t, "./examples/10-builtins", ns)
	keep := createPod(t, ns)
	gone := createPod(t, ns)
	waitLog(t, op, fmt.Sprintf("[%s/%s] === Pod killing happens in 30s.", ns, keep.Name), 1)
	waitLog(t, op, fmt.Sprintf("[%s/%s] === Pod killing happens in 30s.", ns, gone.Name), 1)
	eventually(t, waitShort, "the finalizer on the pod", func() (bool, error) {
		p, err := kube(t).CoreV1().Pods(ns).Get(context.Background(), gone.Name, metav1.GetOptions{})
		return err == nil && slices.Contains(p.Finalizers, "kopf.zalando.org/KopfFinalizerMarker"), err
	})

	if err := kube(t).CoreV1().Pods(ns).Delete(context.Background(), gone.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, op, fmt.Sprintf("[%s/%s] === Pod killing is cancelled!", ns, gone.Name), 1)
	waitPodGone(t, ns, gone.Name)
	assertCount(t, op, "Pod killing happens NOW!", 0)
	if err := op.Stop(waitShort); err != nil {
		t.Fatal(err)
	}

	t.Setenv("POD_TTL", "1s")
	op2 := runOperator(t, "./examples/10-builtins", ns)
	waitLog(t, op2, fmt.Sprintf("[%s/%s] Resuming is processed: 1 succeeded; 0 failed.", ns, keep.Name), 1)
	assertCount(t, op2, fmt.Sprintf("[%s/%s] === Pod killing happens in 1s.", ns, keep.Name), 1)
	waitLog(t, op2, fmt.Sprintf("[%s/%s] === Pod killing happens NOW!", ns, keep.Name), 1)
	waitPodGone(t, ns, keep.Name)
	waitLog(t, op2, fmt.Sprintf("[%s/%s] Deletion is processed: 1 succeeded; 0 failed.", ns, keep.Name), 1)
	assertCount(t, op2, "Pod killing is cancelled!", 0)
}
