package kube

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/resources"
)

// WatchOptions tune the watch streams of a ListWatch.
type WatchOptions struct {
	// ServerTimeout is sent as timeoutSeconds; 0 lets client-go choose.
	ServerTimeout time.Duration
	// InactivityTimeout ends a stream that delivers nothing, not even a
	// bookmark, for this long; the informer then watches again from the last
	// seen version. 0 or negative: never.
	InactivityTimeout time.Duration
	// ClientTimeout ends every stream after this long, whatever it carries;
	// the informer then watches again. 0: never.
	ClientTimeout time.Duration
	Clock         clock.WithTicker
	// OnInactive is told when a stream is ended for inactivity.
	OnInactive func()
	// KeepManagedFields passes metadata.managedFields on; by default they
	// are dropped from every listed and watched object, as nothing reads
	// them and they are a large share of each cached object.
	KeepManagedFields bool
	// Compact lists and watches objects as *Compact (compact.go) rather
	// than *unstructured.Unstructured.
	Compact bool
	// LabelSelector lists and watches only the objects it selects (the
	// shards a replica serves); "": every object.
	LabelSelector string
}

// ListWatch lists and watches a resource in a namespace ("" for all), with
// bookmarks requested so that quiet streams still show signs of life.
func (c *Client) ListWatch(res resources.Resource, namespace string, o WatchOptions) *cache.ListWatch {
	src := c.collection(res, namespace, o.KeepManagedFields)
	var k *codec
	if o.Compact {
		k = &codec{} // shared by the lists and watches, whose objects the informer mixes
		if rc, ok := src.(rawCollection); ok {
			rc.codec = k
			src = rc
		}
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = o.LabelSelector
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			defer o.answerWithin(cancel)()
			if o.Compact {
				return listCompact(ctx, src, opts, compactOptions{dropManagedFields: !o.KeepManagedFields, codec: k})
			}
			list, err := src.List(ctx, opts)
			if err != nil {
				return nil, err
			}
			if !o.KeepManagedFields { // the raw client has dropped them already
				for i := range list.Items {
					DropManagedFields(&list.Items[i])
				}
			}
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.AllowWatchBookmarks = true
			opts.LabelSelector = o.LabelSelector
			if o.ServerTimeout > 0 {
				secs := int64(o.ServerTimeout / time.Second)
				opts.TimeoutSeconds = &secs
			}
			ctx, cancel := context.WithCancel(ctx)
			answered := o.answerWithin(cancel)
			w, err := watchOf(ctx, src, opts, o, k)
			answered()
			if err != nil {
				cancel()
				return nil, err
			}
			return newWatchdog(w, o, cancel), nil
		},
	}
}

// answerWithin abandons a list or watch request (via cancel) whose response
// has not begun within the inactivity timeout: a pooled connection that a
// load balancer dropped silently would otherwise take the request and never
// answer, with no error to react to. The returned func marks the answer.
func (o WatchOptions) answerWithin(cancel context.CancelFunc) (answered func()) {
	if o.InactivityTimeout <= 0 {
		return func() {}
	}
	clk := o.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	t := clk.NewTimer(o.InactivityTimeout)
	done := make(chan struct{})
	go func() {
		defer t.Stop()
		select {
		case <-t.C():
			cancel()
		case <-done:
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

// collection is the resource's objects in a namespace ("" for all).
func (c *Client) collection(res resources.Resource, namespace string, keepManagedFields bool) resourceLister {
	if c.watching != nil {
		rc := c.watching.collection(res, namespace)
		rc.dropManagedFields = !keepManagedFields
		return rc
	}
	ri := c.Dynamic.Resource(res.GVR())
	if res.Namespaced && namespace != "" {
		return ri.Namespace(namespace)
	}
	return ri
}

// DropManagedFields removes metadata.managedFields from an object: kopfgo
// never reads them (see WatchOptions.KeepManagedFields).
func DropManagedFields(obj runtime.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if meta, ok := u.Object["metadata"].(map[string]any); ok {
			delete(meta, "managedFields")
		}
	}
}

// listCompact lists compactly: the raw client keeps the items' JSON as it
// arrives; the dynamic client's decoded items are encoded again.
func listCompact(ctx context.Context, src resourceLister, opts metav1.ListOptions, o compactOptions) (runtime.Object, error) {
	if rc, ok := src.(rawCollection); ok {
		return rc.ListCompact(ctx, opts)
	}
	list, err := src.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := &CompactList{Items: make([]*Compact, 0, len(list.Items))}
	out.ResourceVersion, out.Continue = list.GetResourceVersion(), list.GetContinue()
	out.RemainingItemCount = list.GetRemainingItemCount()
	for i := range list.Items {
		c, err := compactOf(&list.Items[i], o)
		if err != nil {
			return nil, err
		}
		out.Items = append(out.Items, c)
	}
	return out, nil
}

// watchOf starts a stream, compact or not.
func watchOf(ctx context.Context, src resourceLister, opts metav1.ListOptions, o WatchOptions, k *codec) (watch.Interface, error) {
	if !o.Compact {
		return src.Watch(ctx, opts)
	}
	if rc, ok := src.(rawCollection); ok {
		return rc.WatchCompact(ctx, opts)
	}
	w, err := src.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return newCompacting(w, compactOptions{dropManagedFields: !o.KeepManagedFields, codec: k}), nil
}

// compacting passes a decoded stream's events on with their objects
// compact. (watch.Filter would leak its goroutine when stopped while it
// sends.)
type compacting struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

func newCompacting(inner watch.Interface, o compactOptions) *compacting {
	c := &compacting{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(c.out)
		defer inner.Stop()
		for {
			var ev watch.Event
			var ok bool
			select {
			case ev, ok = <-inner.ResultChan():
				if !ok {
					return
				}
			case <-c.stop:
				return
			}
			if u, isU := ev.Object.(*unstructured.Unstructured); isU {
				obj, err := compactOf(u, o)
				if err != nil {
					ev = errorEvent(err)
				} else {
					ev.Object = obj
				}
			}
			select {
			case c.out <- ev:
			case <-c.stop:
				return
			}
		}
	}()
	return c
}

func (c *compacting) Stop()                          { c.once.Do(func() { close(c.stop) }) }
func (c *compacting) ResultChan() <-chan watch.Event { return c.out }

type resourceLister interface {
	List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// watchdog passes a stream's events on (without managedFields, unless kept)
// and stops the stream when it has been silent for too long: a connection
// dropped silently (by a load balancer, say) would otherwise hang the watch
// forever, with no error to react to.
type watchdog struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

// newWatchdog wraps a stream; release (the stream's request context) is
// called when the stream ends, however it ends.
func newWatchdog(inner watch.Interface, o WatchOptions, release context.CancelFunc) *watchdog {
	w := &watchdog{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	clk := o.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	go func() {
		defer close(w.out)
		if release != nil {
			defer release()
		}
		defer inner.Stop()
		idle := o.InactivityTimeout
		if idle <= 0 {
			idle = 1<<63 - 1
		}
		timer := clk.NewTimer(idle)
		defer timer.Stop()
		var deadline <-chan time.Time
		if o.ClientTimeout > 0 {
			d := clk.NewTimer(o.ClientTimeout)
			defer d.Stop()
			deadline = d.C()
		}
		for {
			select {
			case ev, ok := <-inner.ResultChan():
				if !ok {
					return
				}
				if !timer.Stop() {
					select {
					case <-timer.C():
					default:
					}
				}
				timer.Reset(idle)
				if !o.KeepManagedFields {
					DropManagedFields(ev.Object)
				}
				select {
				case w.out <- ev:
				case <-w.stop:
					return
				}
			case <-timer.C():
				if o.OnInactive != nil {
					o.OnInactive()
				}
				return
			case <-deadline:
				return
			case <-w.stop:
				return
			}
		}
	}()
	return w
}

func (w *watchdog) Stop()                          { w.once.Do(func() { close(w.stop) }) }
func (w *watchdog) ResultChan() <-chan watch.Event { return w.out }
