// Package allatonce registers many kinds of handlers at once, for debugging
// and testing, as Kopf's 99-all-at-once does: startup handlers (one retried),
// a cleanup handler, creation handlers that post events, fail once and
// create a child pod, update and field handlers, a delete handler, and an
// event handler for the children. Run:
//
//	kopfgo run ./examples/99-all-at-once
package allatonce

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/hierarchies"
)

const resource = "kopf.dev/v1/kopfexamples"

func Register(r kopfgo.Registrar) {
	r.Startup(startupFnSimple, kopfgo.ID("startup_fn_simple"))
	r.Startup(startupFnRetried, kopfgo.ID("startup_fn_retried"))
	r.Cleanup(cleanupFn, kopfgo.ID("cleanup_fn"))
	r.Create(resource, create1, kopfgo.ID("create_1"))
	// Kopf's create_2 has no backoff of its own: its e2e suite runs the
	// examples with the default backoff set to 1 s, which `kopfgo run` cannot
	// set from outside, so the port carries the 1 s itself.
	r.Create(resource, create2, kopfgo.ID("create_2"), kopfgo.Backoff(time.Second))
	r.Update(resource, update, kopfgo.ID("update"))
	r.Field(resource, "spec.lst", updateLst, kopfgo.ID("update_lst"))
	r.Delete(resource, deleteFn, kopfgo.ID("delete"))
	r.Create(resource, createPod, kopfgo.ID("create_pod"))
	r.Event("v1/pods", examplePodChange, kopfgo.ID("example_pod_change"),
		kopfgo.Labels{"application": "kopf-example-10"})
}

func startupFnSimple(ctx context.Context, a *kopfgo.Activity) error {
	a.Logger.Info("Starting in 1s...")
	sleep(ctx, time.Second)
	return nil
}

func startupFnRetried(ctx context.Context, a *kopfgo.Activity) error {
	if a.Retry < 3 {
		return kopfgo.TemporaryMsg(fmt.Sprintf("Going to succeed in %ds", 3-a.Retry), time.Second)
	}
	a.Logger.Info("Starting retried...")
	return nil
}

func cleanupFn(ctx context.Context, a *kopfgo.Activity) error {
	a.Logger.Info("Cleaning up in 3s...")
	sleep(ctx, 3*time.Second)
	return nil
}

func create1(ctx context.Context, c *kopfgo.Change) (any, error) {
	// Kopf's create_1 also posts an event for each child of
	// _create_children(), which creates none.
	if err := kopfgo.Info(ctx, c, "AnyReason", ""); err != nil {
		return nil, err
	}
	if err := kopfgo.Event(ctx, c, "Warning", "SomeReason", "Cannot do something"); err != nil {
		return nil, err
	}
	return map[string]any{"job1-status": 100}, nil
}

func create2(ctx context.Context, c *kopfgo.Change) (any, error) {
	sleep(ctx, time.Second) // wait for something, e.g. an external API poller
	if c.Retry == 0 {
		// Retried by the framework, even if the operator restarts meanwhile.
		return nil, errors.New("Whoops!")
	}
	return map[string]any{"job2-status": 100}, nil
}

func update(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info(fmt.Sprintf("Handling the diff: %v", c.Diff))
	return nil, nil
}

func updateLst(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info(fmt.Sprintf("Handling the FIELD = %v -> %v", c.Old, c.New))
	return nil, nil
}

func deleteFn(ctx context.Context, c *kopfgo.Change) (any, error) { return nil, nil }

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func createPod(ctx context.Context, c *kopfgo.Change) (any, error) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "the-only-one", Image: "busybox", Command: []string{"sh", "-x", "-c", "sleep 1"},
	}}}}
	// Make it our child: namespace, name, labels, owner reference.
	if err := hierarchies.Adopt(pod, c); err != nil {
		return nil, kopfgo.Permanent(err)
	}
	if err := hierarchies.Label(pod, map[string]string{"application": "kopf-example-10"}); err != nil {
		return nil, kopfgo.Permanent(err)
	}
	api, err := kubernetes.NewForConfig(kopfgo.RESTConfig(ctx))
	if err != nil {
		return nil, kopfgo.Permanent(err)
	}
	created, err := api.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	c.Logger.Info(fmt.Sprintf("Pod child is created: %s", created.Name))
	return nil, nil
}

func examplePodChange(ctx context.Context, e *kopfgo.WatchEvent) (any, error) {
	e.Logger.Info("This pod is special for us.")
	return nil, nil
}
