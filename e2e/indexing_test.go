//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopfgo/kopfgo"
)

func createLabelledPod(t *testing.T, ns, name string, labels map[string]string) {
	t.Helper()
	_, err := kube(t).CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

func deletePod(t *testing.T, ns, name string) {
	t.Helper()
	// Pods never scheduled (there is no scheduler here) go at once.
	if err := kube(t).CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func podsByParent(ctx context.Context, o *kopfgo.Object) (map[string]string, error) {
	return map[string]string{o.Labels["parent"]: o.Name}, nil
}

// TestIndexIsCompleteBeforeTheFirstHandler: with 50 pods of one parent
// existing, the parent's creation handler, the first handler the operator runs,
// sees all 50 in the index (compat: indices-complete); so does the next
// parent's, and the index shrinks as pods go (compat: indices-removal), keys
// disappearing with their last pod (compat: indices-structure). Pods without
// the label are not indexed (filters apply). The operator runs one handler at a
// time (MaxWorkers=1): indexing takes no worker and no slot of that limit, so
// the limit cannot deadlock the startup as Kopf's worker limit can (compat:
// indices-worker-limit).
func TestIndexIsCompleteBeforeTheFirstHandler(t *testing.T) {
	ns := namespace(t)
	for i := range 50 {
		createLabelledPod(t, ns, fmt.Sprintf("a-%d", i), map[string]string{"parent": "parent-a"})
	}
	for i := range 20 {
		createLabelledPod(t, ns, fmt.Sprintf("b-%d", i), map[string]string{"parent": "parent-b"})
	}
	createLabelledPod(t, ns, "orphan", nil)
	createKex(t, ns, kexObj("parent-a", nil, nil, map[string]any{"field": "x"}))

	var (
		mu   sync.Mutex
		saw  = map[string]int{}
		pods *kopfgo.Index[string, string]
	)
	opts := kopfgo.Options{Namespaces: []string{ns}}
	opts.Settings.Execution.MaxWorkers = 1
	log := embeddedWith(t, opts, func(op *kopfgo.Operator) {
		pods = kopfgo.OnIndex(op.On, "v1/pods", podsByParent, kopfgo.Labels{"parent": kopfgo.Present})
		op.On.Create("kopfexamples", func(ctx context.Context, c *kopfgo.Change) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			saw[c.Name] = len(pods.Get(c.Name))
			return map[string]any{"pods": saw[c.Name]}, nil
		}, kopfgo.ID("create_fn"))
	})
	log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", 1)
	createKex(t, ns, kexObj("parent-b", nil, nil, map[string]any{"field": "x"}))
	log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", 2)
	mu.Lock()
	if saw["parent-a"] != 50 || saw["parent-b"] != 20 {
		t.Errorf("the creation handlers saw %v pods, want parent-a 50 and parent-b 20", saw)
	}
	mu.Unlock()
	if pods.Len() != 2 || pods.Has("") {
		t.Errorf("index keys = %v, want parent-a and parent-b only (the orphan is filtered out)", pods.Keys())
	}

	for i := range 10 {
		deletePod(t, ns, fmt.Sprintf("a-%d", i))
	}
	for i := range 20 {
		deletePod(t, ns, fmt.Sprintf("b-%d", i))
	}
	eventually(t, waitShort, "the index to shrink", func() (bool, error) {
		return len(pods.Get("parent-a")) == 40 && !pods.Has("parent-b"), nil
	})
	if pods.Len() != 1 {
		t.Errorf("index keys = %v, want parent-a only", pods.Keys())
	}
}

// TestMemosPerObjectAndOperator: an object's memo lives while the object
// does and starts afresh for a re-created object (compat: memos-object); every object's
// memo starts from the operator's, sharing its values: a queue that a
// startup handler puts there gets the pushes of both objects' handlers
// (compat: memos-operator).
func TestMemosPerObjectAndOperator(t *testing.T) {
	ns := namespace(t)
	type queue struct {
		mu    sync.Mutex
		names []string
	}
	var (
		shared *queue
		rec    recorder
	)
	embeddedWith(t, kopfgo.Options{Namespaces: []string{ns}}, func(op *kopfgo.Operator) {
		op.On.Startup(func(ctx context.Context, a *kopfgo.Activity) error {
			shared = &queue{}
			a.Memo.Store("queue", shared)
			return nil
		}, kopfgo.ID("startup"))
		op.On.Event("kopfexamples", func(ctx context.Context, e *kopfgo.WatchEvent) (any, error) {
			n, _ := kopfgo.MemoValue[int](e.Memo, "events")
			e.Memo.Store("events", n+1)
			rec.add(e.Name, fmt.Sprint(n+1))
			if q, ok := kopfgo.MemoValue[*queue](e.Memo, "queue"); ok {
				q.mu.Lock()
				q.names = append(q.names, e.Name)
				q.mu.Unlock()
			}
			return nil, nil
		}, kopfgo.ID("count"))
	})
	createKex(t, ns, kexObj("one", nil, nil, map[string]any{"field": "x"}))
	createKex(t, ns, kexObj("two", nil, nil, map[string]any{"field": "x"}))
	eventually(t, waitShort, "both added", func() (bool, error) { return len(rec.of("one")) == 1 && len(rec.of("two")) == 1, nil })
	patchKex(t, ns, "one", `{"spec":{"field":"y"}}`)
	eventually(t, waitShort, "the change", func() (bool, error) { return len(rec.of("one")) == 2, nil })
	deleteKex(t, ns, "one")
	eventually(t, waitShort, "the deletion", func() (bool, error) { return len(rec.of("one")) == 3, nil })
	createKex(t, ns, kexObj("one", nil, nil, map[string]any{"field": "z"}))
	eventually(t, waitShort, "the new one", func() (bool, error) { return len(rec.of("one")) == 4, nil })
	if got := fmt.Sprint(rec.of("one")); got != "[1 2 3 1]" {
		t.Errorf("counts seen by one = %s, want [1 2 3 1]: the re-created object starts afresh", got)
	}
	if shared == nil {
		t.Fatal("the startup handler did not run")
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if len(shared.names) != 5 {
		t.Errorf("the operator memo's queue got %v, want all 5 events of both objects", shared.names)
	}
}
