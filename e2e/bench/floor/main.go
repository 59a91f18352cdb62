// Command floor is the floor of the benchmark: a bare client-go program that
// watches kopfexamples and gives each new or changed object only the writes
// that cannot be avoided (a merge patch of the diff-base annotation and, for
// new objects, one of the status subresource with the result). No framework
// does less and still persists what it has handled, so every other
// contender's figures are reported as ratios to this one's.
//
// KOPFGO_BENCH_SELECTOR, a label selector, makes it watch only the objects
// it selects: the scale-out scenario runs several floors, each over its own
// shards' objects, as kopfgo's sharded replicas watch theirs.
package main

import (
	"context"
	"fmt"
	"os"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kopfgo/kopfgo/e2e/bench/probe"
)

// workers is the floor's and the peer's concurrency: writes are round trips,
// so one worker would measure the API server's latency, not its capacity.
const workers = 16

func main() {
	ctx, c, stop, err := probe.Start()
	if err == nil {
		err = run(ctx, c)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c *probe.Contender) error {
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	selector := os.Getenv("KOPFGO_BENCH_SELECTOR")
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, c.Namespace, func(o *metav1.ListOptions) { o.LabelSelector = selector })
	informer := factory.ForResource(probe.GVR).Informer()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			queue.Add(key)
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.Probe.Event(); enqueue(obj) },
		UpdateFunc: func(_, obj any) { c.Probe.Event(); enqueue(obj) },
	}); err != nil {
		return err
	}
	client := dyn.Resource(probe.GVR).Namespace(c.Namespace)
	var wg sync.WaitGroup
	wg.Go(func() { informer.RunWithContext(ctx) })
	for range workers {
		wg.Go(func() {
			for {
				key, quit := queue.Get()
				if quit {
					return
				}
				if err := handle(ctx, informer.GetStore(), client, c.Probe, key); err != nil && ctx.Err() == nil {
					fmt.Fprintf(os.Stderr, "floor: %s: %v\n", key, err)
					queue.AddRateLimited(key)
				} else {
					queue.Forget(key)
				}
				queue.Done(key)
			}
		})
	}
	<-ctx.Done()
	queue.ShutDown()
	wg.Wait()
	return nil
}

// handle writes the diff-base annotation first: the watch event of that
// write then shows the object handled, so the status write's event does not
// make it look new again (without a memory of its own writes, the floor
// relies on their order).
func handle(ctx context.Context, store cache.Store, client dynamic.ResourceInterface, p *probe.Probe, key string) error {
	obj, ok, err := store.GetByKey(key)
	if err != nil || !ok {
		return err
	}
	u := obj.(*unstructured.Unstructured)
	want, err := probe.DiffBase(u.Object["spec"])
	if err != nil {
		return err
	}
	have, existed := u.GetAnnotations()[probe.DiffBaseAnnotation]
	if have == want {
		return nil
	}
	p.Call()
	ann, err := probe.AnnotationsPatch(want)
	if err != nil {
		return err
	}
	if _, err := client.Patch(ctx, u.GetName(), types.MergePatchType, ann, metav1.PatchOptions{}); err != nil {
		return err
	}
	if existed {
		return nil // an update: no result to deliver
	}
	_, err = client.Patch(ctx, u.GetName(), types.MergePatchType, probe.StatusPatch(), metav1.PatchOptions{}, "status")
	return err
}
