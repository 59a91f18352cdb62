// Package children creates a child pod for each KopfExample, adopted by it:
// owned (so that Kubernetes' garbage collector deletes the pod with its
// parent), named after it, in its namespace, with its labels. Run:
//
//	kopfgo run ./examples/02-children
package children

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kopfgo/kopfgo"
)

func init() {
	kopfgo.On.Create("kopf.dev/v1/kopfexamples", createFn, kopfgo.ID("create_fn"))
}

func createFn(ctx context.Context, c *kopfgo.Change) (any, error) {
	duration, field := any(0), any("default-value") // Kopf's spec.get(..., default)
	if v, ok := c.Spec["duration"]; ok {
		duration = v
	}
	if v, ok := c.Spec["field"]; ok {
		field = v
	}
	pod := &corev1.Pod{
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:    "the-only-one",
				Image:   "busybox",
				Command: []string{"sh", "-x", "-c"},
				Args:    []string{fmt.Sprintf("echo \"FIELD=$FIELD\"\nsleep %v\n", duration)},
				Env:     []corev1.EnvVar{{Name: "FIELD", Value: fmt.Sprint(field)}},
			}},
		},
	}

	// Make it our child: assign the namespace, name, labels, owner references.
	if err := kopfgo.Adopt(pod, c); err != nil {
		return nil, kopfgo.Permanent(err)
	}

	// Actually create the object by requesting the Kubernetes API.
	api, err := kubernetes.NewForConfig(kopfgo.RESTConfig(ctx))
	if err != nil {
		return nil, kopfgo.Permanent(err)
	}
	created, err := api.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, err // retried after the backoff
	}
	c.Logger.Info(fmt.Sprintf("Pod child is created: %s", created.Name))

	// Update the parent's status.
	return map[string]any{"children": []string{string(created.UID)}}, nil
}
