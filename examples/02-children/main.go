// Package children creates a child pod for each KopfExample, adopted by it:
// owned (so that Kubernetes' garbage collector deletes the pod with its
// parent), named after it, in its namespace, with its labels. The handler
// receives the KopfExample as a Go struct and creates the pod with the
// operator's ready clientset. Run:
//
//	kopfgo run ./examples/02-children
package children

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/hierarchies"
)

// KopfExample is the example CRD's object, as far as this operator reads it.
type KopfExample struct {
	Spec struct {
		Duration intstr.IntOrString `json:"duration"` // "1m" or 60; absent: 0
		Field    *string            `json:"field"`
	} `json:"spec"`
}

func Register(r kopfgo.Registrar) {
	kopfgo.OnCreate(r, "kopf.dev/v1/kopfexamples", createFn, kopfgo.ID("create_fn"))
}

func createFn(ctx context.Context, c *kopfgo.TypedChange[*KopfExample]) (any, error) {
	field := "default-value" // Kopf's spec.get('field', 'default-value')
	if c.Obj.Spec.Field != nil {
		field = *c.Obj.Spec.Field
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name:    "the-only-one",
		Image:   "busybox",
		Command: []string{"sh", "-x", "-c"},
		Args:    []string{fmt.Sprintf("echo \"FIELD=$FIELD\"\nsleep %s\n", c.Obj.Spec.Duration.String())},
		Env:     []corev1.EnvVar{{Name: "FIELD", Value: field}},
	}}}}

	// Make it our child: assign the namespace, name, labels, owner references.
	if err := hierarchies.Adopt(pod, c); err != nil {
		return nil, kopfgo.Permanent(err)
	}

	// Actually create the object, with the operator's own clientset.
	created, err := kopfgo.ClientsFrom(ctx).Kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, err // retried after the backoff
	}
	c.Logger.Info(fmt.Sprintf("Pod child is created: %s", created.Name))

	// Update the parent's status.
	return map[string]any{"children": []string{string(created.UID)}}, nil
}
