package kubefake

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/patch"
)

// next is the watch's next event; a failure after a while.
func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the watch ended")
		}
		return ev
	case <-time.After(10 * time.Second): // a failure detector
		t.Fatal("no event")
	}
	return watch.Event{}
}

func annotate(t *testing.T, c *kube.Client, name, value string) {
	t.Helper()
	p := &patch.Patch{}
	p.SetAnnotation("x", value)
	if _, err := c.Apply(context.Background(), kex, "ns", name, p); err != nil {
		t.Fatal(err)
	}
}

// What is written between a list and its watch is told to the watch, in
// order, with the resourceVersions the API gave: a watch from the list's
// resourceVersion misses nothing, as from an API server.
func TestAChangeBetweenAListAndItsWatchIsTold(t *testing.T) {
	dyn := newFake(kexObject("a", nil), kexObject("b", nil))
	api := New(dyn, Options{})
	c, err := api.Client(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	annotate(t, c, "b", "before")
	lw := c.ListWatch(kex, "ns", kube.WatchOptions{})
	listed, err := lw.ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list := listed.(*unstructured.UnstructuredList)
	if list.GetResourceVersion() != api.ResourceVersion() || list.GetResourceVersion() == "0" {
		t.Fatalf("the list's resourceVersion is %q, want the last write's, %s", list.GetResourceVersion(), api.ResourceVersion())
	}
	annotate(t, c, "a", "between")
	if err := dyn.Resource(kex.GVR()).Namespace("ns").Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(kex.GVR()).Namespace("ns").Create(ctx, kexObject("c", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	annotate(t, c, "a", "after")
	rv := list.GetResourceVersion()
	for _, want := range []struct {
		typ         watch.EventType
		name, value string
	}{{watch.Modified, "a", "between"}, {watch.Deleted, "b", "before"}, {watch.Added, "c", ""}, {watch.Modified, "a", "after"}} {
		ev := next(t, w)
		u, ok := ev.Object.(*unstructured.Unstructured)
		if !ok || ev.Type != want.typ || u.GetName() != want.name || u.GetAnnotations()["x"] != want.value {
			t.Fatalf("told %s %v, want %s of %s with x=%q", ev.Type, ev.Object, want.typ, want.name, want.value)
		}
		if number(t, u.GetResourceVersion()) <= number(t, rv) {
			t.Errorf("%s of %s at resourceVersion %s, after %s: want them increasing", ev.Type, want.name, u.GetResourceVersion(), rv)
		}
		rv = u.GetResourceVersion()
	}
}

func number(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}

// A watch from a resourceVersion older than the API keeps events for is
// one ERROR event, 410 Expired, as an API server answers.
func TestAWatchFromBeforeTheHistoryIsExpired(t *testing.T) {
	api := New(newFake(kexObject("a", nil)), Options{History: 1})
	c, err := api.Client(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	from := api.ResourceVersion()
	annotate(t, c, "a", "1")
	annotate(t, c, "a", "2") // the history keeps this one only
	w, err := c.ListWatch(kex, "ns", kube.WatchOptions{}).WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: from})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := next(t, w)
	if err := apierrors.FromObject(ev.Object); ev.Type != watch.Error || !apierrors.IsResourceExpired(err) {
		t.Fatalf("told %s %v, want an ERROR event, 410 Expired", ev.Type, ev.Object)
	}
	if ev, ok := <-w.ResultChan(); ok {
		t.Errorf("then %s %v, want the end of the watch", ev.Type, ev.Object)
	}
}

// An informer's reflector whose watch is answered 410 lists again, and so
// holds what was written between its first list and its watch.
func TestAReflectorWatchingFromBeforeTheHistoryListsAgain(t *testing.T) {
	dyn := newFake(kexObject("a", nil))
	var (
		c       *kube.Client
		watches atomic.Int32
	)
	api := New(dyn, Options{History: 1, OnWatch: func(schema.GroupVersionResource, metav1.ListOptions) {
		if watches.Add(1) == 1 {
			// Two writes between the first list and its watch: the
			// history keeps the second only.
			annotate(t, c, "a", "1")
			annotate(t, c, "a", "2")
		}
	}})
	var err error
	if c, err = api.Client(nil); err != nil {
		t.Fatal(err)
	}
	lw := c.ListWatch(kex, "ns", kube.WatchOptions{Compact: true})
	var lists atomic.Int32
	counted := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			lists.Add(1)
			return lw.ListWithContext(ctx, opts)
		},
		WatchFuncWithContext: lw.WatchWithContext,
	}
	store := notifying{cache.NewStore(cache.MetaNamespaceKeyFunc), make(chan struct{}, 1)}
	r := cache.NewReflector(counted, &kube.Compact{}, store, 0)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.RunWithContext(ctx)
	}()
	defer wg.Wait()
	defer cancel()
	deadline := time.NewTimer(30 * time.Second) // a failure detector
	defer deadline.Stop()
	for {
		if obj, ok, _ := store.GetByKey("ns/a"); ok {
			u, err := obj.(*kube.Compact).Decode()
			if err != nil {
				t.Fatal(err)
			}
			if u.GetAnnotations()["x"] == "2" {
				break
			}
		}
		select {
		case <-store.changed:
		case <-deadline.C:
			t.Fatalf("the reflector never held a's last write (lists: %d, watches: %d)", lists.Load(), watches.Load())
		}
	}
	if n := lists.Load(); n < 2 {
		t.Errorf("%d lists, want the first and the one after the 410", n)
	}
}

// notifying is a store that tells of its changes.
type notifying struct {
	cache.Store
	changed chan struct{}
}

func (s notifying) poke() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func (s notifying) Add(obj any) error {
	defer s.poke()
	return s.Store.Add(obj)
}

func (s notifying) Update(obj any) error {
	defer s.poke()
	return s.Store.Update(obj)
}

func (s notifying) Replace(objs []any, rv string) error {
	defer s.poke()
	return s.Store.Replace(objs, rv)
}
