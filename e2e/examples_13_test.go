//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExample13Hooks(t *testing.T) {
	ns := namespace(t)
	port := freeTCPPort(t)
	op := runOperator(t, "./examples/13-hooks", ns, "--liveness=http://127.0.0.1:"+port+"/healthz")
	waitLog(t, op, "Activity 'startup_fn_retried' succeeded.", 1)
	assertCount(t, op, "failed temporarily: Going to succeed in", 3)
	assertCount(t, op, "Activity 'startup_fn_simple' succeeded.", 1)
	waitLog(t, op, "Initial authentication has finished.", 1)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "served", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if _, err := kube(t).CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLog(t, op, "["+ns+"/served] Served by the background task.", 1)

	var probes struct {
		TasksCount       int                 `json:"tasks_count"`
		MonitoredObjects map[string][]string `json:"monitored_objects"`
	}
	eventually(t, waitShort, "the probes", func() (bool, error) {
		code, body, err := httpGet("http://127.0.0.1:" + port + "/healthz")
		if err != nil || code != 200 || json.Unmarshal([]byte(body), &probes) != nil {
			return false, err
		}
		return probes.TasksCount == 1, nil
	})
	if got := probes.MonitoredObjects[ns]; len(got) != 1 || got[0] != "served" {
		t.Errorf("monitored_objects = %v", probes.MonitoredObjects)
	}

	if err := op.Stop(waitShort); err != nil {
		t.Fatal(err)
	}
	assertCount(t, op, "Cleaning up...", 1)
	assertCount(t, op, "["+ns+"/served] Serving is finished by request.", 1)
	assertCount(t, op, "Activity 'cleanup_fn' succeeded.", 1)
}
