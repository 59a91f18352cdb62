package reactor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/replicas"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/patch"
)

// labeller gives the objects of a resource that belong to no shard (no
// label, or one naming no shard of this sharding) the label of their
// shard, while this replica coordinates the sharding (it holds shard 0).
// It watches only those objects, and labels each with one merge patch
// through the API's flow control; once labelled, an object leaves its
// watch and enters the watch of its shard's holder, which handles it. The
// labeller handles nothing, so an object is handled once, by its holder,
// whoever labelled it.
type labeller struct {
	*run
	res   resources.Resource
	scope func(namespace string) bool // nil: every namespace
	set   replicas.ShardSet

	informer cache.SharedIndexInformer
	queue    workqueue.TypedRateLimitingInterface[string]
	labelled atomic.Int64
}

// labellers are the patches in flight per resource; the flow control
// bounds the writes of the whole operator.
const labellers = 4

func newLabeller(r *run, res resources.Resource, ns string, scope resources.Namespaces, set replicas.ShardSet) *labeller {
	l := &labeller{run: r, res: res, set: set}
	if res.Namespaced {
		l.scope = scope.Match
	}
	watching := r.Settings.Watching
	lw := r.client.ListWatch(res, ns, kube.WatchOptions{
		ServerTimeout: watching.ServerTimeout, InactivityTimeout: watching.InactivityTimeout,
		ClientTimeout: watching.ClientTimeout, Clock: r.Clock,
		Compact: true, LabelSelector: set.Unassigned(),
	})
	l.informer = cache.NewSharedIndexInformer(lw, &kube.Compact{}, 0, cache.Indexers{})
	l.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Clock: r.Clock})
	return l
}

// label labels the objects of no shard until ctx ends.
func (l *labeller) label(ctx context.Context) {
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			l.queue.Add(key)
		}
	}
	_ = l.informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, _ *cache.Reflector, err error) {
		if ctx.Err() == nil {
			l.Logger.Debug(fmt.Sprintf("Cannot watch the unsharded %s, retrying: %v", l.res, err))
		}
	})
	if _, err := l.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		l.Logger.Error(fmt.Sprintf("Cannot watch the unsharded %s: %v", l.res, err))
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { l.informer.RunWithContext(ctx) })
	for range labellers {
		wg.Go(func() {
			for l.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	l.queue.ShutDown()
	wg.Wait()
	if n := l.labelled.Load(); n > 0 {
		l.Logger.Info(fmt.Sprintf("Labelled %d objects of %s with their shards (%s).", n, l.res, l.set.Label))
	}
}

// next labels the next object queued; false once the queue shuts down.
func (l *labeller) next(ctx context.Context) bool {
	key, quit := l.queue.Get()
	if quit {
		return false
	}
	defer l.queue.Done(key)
	obj, exists, err := l.informer.GetStore().GetByKey(key)
	if err != nil || !exists {
		l.queue.Forget(key) // labelled meanwhile, or gone
		return true
	}
	c := obj.(*kube.Compact)
	if l.scope != nil && !l.scope(c.Namespace) {
		l.queue.Forget(key)
		return true
	}
	shard := l.set.Assign(c.Namespace, c.Name)
	p := &patch.Patch{}
	// The uid is a precondition: the patch is for the object seen, and an
	// object recreated under its name meanwhile is labelled when it is
	// seen (with the same shard, which the name decides).
	p.Set([]string{"metadata", "uid"}, c.UID)
	p.Labels()[l.set.Label] = shard
	_, err = l.client.Apply(ctx, l.res, c.Namespace, c.Name, p)
	switch {
	case err == nil:
		l.queue.Forget(key)
		l.labelled.Add(1)
		l.Logger.Debug(fmt.Sprintf("Labelled %s %s with shard %s.", l.res, key, shard))
	case errors.Is(err, kube.ErrGone) || apierrors.IsConflict(err):
		l.queue.Forget(key) // gone, or another object of that name by now
	case ctx.Err() != nil:
	default:
		l.Logger.Warn(fmt.Sprintf("Cannot label %s %s with its shard, retrying: %v", l.res, key, err))
		l.queue.AddRateLimited(key)
	}
	return true
}
