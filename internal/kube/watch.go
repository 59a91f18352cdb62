package kube

import (
	"context"
	"errors"
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
	if c.watching == nil {
		// A Client not made by NewClient (a bare one in a test whose
		// watcher never lists) has no API: listing fails, not the build.
		return &cache.ListWatch{
			ListWithContextFunc:  func(context.Context, metav1.ListOptions) (runtime.Object, error) { return nil, errNoAPI },
			WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return nil, errNoAPI },
		}
	}
	src := c.watching.collection(res, namespace)
	src.dropManagedFields = !o.KeepManagedFields
	if o.Compact {
		src.codec = &codec{} // shared by the lists and watches, whose objects the informer mixes
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = o.LabelSelector
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			defer o.answerWithin(cancel)()
			if o.Compact {
				return src.ListCompact(ctx, opts)
			}
			return src.List(ctx, opts)
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
			var w watch.Interface
			var err error
			if o.Compact {
				w, err = src.WatchCompact(ctx, opts)
			} else {
				w, err = src.Watch(ctx, opts)
			}
			answered()
			if err != nil {
				cancel()
				return nil, err
			}
			return newWatchdog(w, o, cancel), nil
		},
	}
}

// errNoAPI: a Client not made by NewClient (kubefake makes one for tests).
var errNoAPI = errors.New("the client has no API to list from: make it with NewClient, or with kubefake.New(...).Client in tests")

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

// DropManagedFields removes metadata.managedFields from an object: kopfgo
// never reads them (see WatchOptions.KeepManagedFields).
func DropManagedFields(obj runtime.Object) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if meta, ok := u.Object["metadata"].(map[string]any); ok {
			delete(meta, "managedFields")
		}
	}
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
