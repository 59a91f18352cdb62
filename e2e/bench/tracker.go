package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/kopfgo/kopfgo/e2e/bench/probe"
)

// tracker watches a namespace from the driver's side and notes when each
// object is first seen handled for the current phase: its spec.field has
// the phase's value, its diff-base annotation matches its spec, and its
// status holds the create handler's result. Every contender is judged by
// this one predicate on what it wrote, not by what it says of itself.
type tracker struct {
	mu      sync.Mutex
	field   string
	want    int
	created map[string]time.Time
	handled map[string]time.Time
	all     chan struct{}
}

func newTracker() *tracker { return &tracker{} }

// phase starts waiting for want objects with spec.field == field.
func (t *tracker) phase(field string, want int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.field, t.want = field, want
	t.created = map[string]time.Time{}
	t.handled = map[string]time.Time{}
	t.all = make(chan struct{})
}

// creating notes when the driver sent an object's creation.
func (t *tracker) creating(name string, at time.Time) {
	t.mu.Lock()
	t.created[name] = at
	t.mu.Unlock()
}

func (t *tracker) observe(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.all == nil || t.handled[u.GetName()] != (time.Time{}) || !t.isHandled(u) {
		return
	}
	t.handled[u.GetName()] = now
	if len(t.handled) == t.want {
		close(t.all)
	}
}

func (t *tracker) isHandled(u *unstructured.Unstructured) bool {
	if f, _, _ := unstructured.NestedString(u.Object, "spec", "field"); f != t.field {
		return false
	}
	if m, _, _ := unstructured.NestedString(u.Object, "status", probe.CreateHandler, "message"); m != probe.Message {
		return false
	}
	want, err := probe.DiffBase(u.Object["spec"])
	return err == nil && u.GetAnnotations()[probe.DiffBaseAnnotation] == want
}

// wait waits until every object of the phase is handled and returns when
// the last one was seen so.
func (t *tracker) wait(ctx context.Context, timeout time.Duration) (time.Time, error) {
	t.mu.Lock()
	all := t.all
	t.mu.Unlock()
	select {
	case <-all:
	case <-time.After(timeout):
		t.mu.Lock()
		defer t.mu.Unlock()
		return time.Time{}, fmt.Errorf("%d of %d objects handled after %s", len(t.handled), t.want, timeout)
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var last time.Time
	for _, at := range t.handled {
		if at.After(last) {
			last = at
		}
	}
	return last, nil
}

// latencies are the creation-to-handled times of the phase's objects.
func (t *tracker) latencies() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []time.Duration
	for name, at := range t.handled {
		if c, ok := t.created[name]; ok {
			out = append(out, at.Sub(c))
		}
	}
	return out
}

// run watches the namespace until ctx ends; it returns once the initial
// listing is stored.
func (t *tracker) run(ctx context.Context, dyn dynamic.Interface, namespace string) error {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, namespace, nil)
	inf := factory.ForResource(probe.GVR).Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    t.observe,
		UpdateFunc: func(_, obj any) { t.observe(obj) },
	}); err != nil {
		return err
	}
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("the driver's watch of %s did not sync", namespace)
	}
	return nil
}
