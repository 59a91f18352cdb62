package kubefake

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kopfgo/kopfgo/internal/kube"
)

// DefaultHistory is how many events of a resource an API keeps for the
// watches that resume from a resourceVersion, unless Options.History says.
const DefaultHistory = 1000

// Options tune an API.
type Options struct {
	// History is how many events of each resource are kept to be replayed
	// to a watch that starts from an earlier resourceVersion; a watch from
	// before the oldest of them is answered 410 Gone, as an API server
	// answers a watch from a compacted revision. 0: DefaultHistory.
	History int
	// OnWrite is called after each write is stored and told to watches.
	OnWrite func()
	// OnWatch is called when a watch of gvr is asked for, before it is
	// served: what it writes is replayed to that watch.
	OnWatch func(gvr schema.GroupVersionResource, opts metav1.ListOptions)
	// WatchFilter, if set, decides which events watches deliver (a watch
	// that lags behind the writes); lists show every object.
	WatchFilter watch.FilterFunc
}

// API is a fake API server over client-go's dynamic fake: it numbers the
// fake's writes with resourceVersions, as an API server does, and keeps
// the recent ones to serve watches. A list answers the collection's
// resourceVersion, and a watch from a resourceVersion is told every event
// after it and then the live ones, so nothing made between a list and its
// watch is lost (client-go's fake tells a watch only what happens once it
// is there).
type API struct {
	dyn  *dynamicfake.FakeDynamicClient
	opts Options

	mu      sync.Mutex
	rv      int64 // the last write's resourceVersion
	history map[schema.GroupVersionResource]*history
}

// history is a resource's recent events and the watches that follow it.
type history struct {
	events []event
	// lost is the resourceVersion of the last event dropped from events:
	// a watch from before it cannot be told everything since.
	lost    int64
	watches map[*watcher]struct{}
}

type event struct {
	rv  int64
	typ watch.EventType
	obj *unstructured.Unstructured
}

// New makes dyn an API: its reactors number every create, update, patch
// and delete, and version every list. Reactors a test prepends afterwards
// run first (to fail or hold a request), as they do on the bare fake.
// Objects given to dyn before New have no resourceVersion until written;
// lists of them are at resourceVersion 1.
func New(dyn *dynamicfake.FakeDynamicClient, opts Options) *API {
	if opts.History <= 0 {
		opts.History = DefaultHistory
	}
	// 1 is the state New found: "0", to a watch, is "from any point".
	a := &API{dyn: dyn, opts: opts, rv: 1, history: map[schema.GroupVersionResource]*history{}}
	dyn.PrependReactor("*", "*", a.react)
	return a
}

// Client is a kube.Client that kube.NewClient made, whose lists, watches
// and patches the API serves over HTTP; its gets, creates and updates go
// to the dynamic fake directly, its discovery to disc.
func (a *API) Client(disc discovery.DiscoveryInterface) (*kube.Client, error) {
	return newClient(a, a.dyn, disc)
}

// Forget drops the events of gvr written so far, as an API server's
// compaction does: a watch from before now is answered 410 Expired, and
// its informer lists again.
func (a *API) Forget(gvr schema.GroupVersionResource) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := a.of(gvr)
	h.events, h.lost = nil, a.rv
}

// ResourceVersion is the last write's.
func (a *API) ResourceVersion() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strconv.FormatInt(a.rv, 10)
}

// react runs in the fake's reactor chain, under its lock: the writes and
// the lists are one sequence, in which each list sees every write numbered
// up to its resourceVersion and none after.
func (a *API) react(action clienttesting.Action) (bool, runtime.Object, error) {
	var typ watch.EventType
	switch action.GetVerb() {
	case "create":
		typ = watch.Added
	case "update", "patch":
		typ = watch.Modified
	case "delete":
		typ = watch.Deleted
	case "list":
		return a.list(action)
	default:
		return false, nil, nil
	}
	tracker := a.dyn.Tracker()
	gvr, ns := action.GetResource(), action.GetNamespace()
	var gone runtime.Object
	if d, ok := action.(clienttesting.DeleteAction); ok {
		obj, err := tracker.Get(gvr, ns, d.GetName())
		if err != nil {
			return true, nil, err
		}
		gone = obj
	}
	handled, obj, err := clienttesting.ObjectReaction(tracker)(action)
	if err != nil || !handled {
		return handled, obj, err
	}
	if gone != nil {
		obj = gone
	}
	u, err := toUnstructured(obj)
	if err != nil {
		return true, nil, err
	}
	a.mu.Lock()
	a.rv++
	u.SetResourceVersion(strconv.FormatInt(a.rv, 10))
	if typ != watch.Deleted {
		if err := tracker.Update(gvr, u, ns); err != nil {
			a.mu.Unlock()
			return true, nil, err
		}
	}
	a.record(gvr, event{rv: a.rv, typ: typ, obj: u})
	a.mu.Unlock()
	if a.opts.OnWrite != nil {
		a.opts.OnWrite()
	}
	return true, u.DeepCopy(), nil
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.DeepCopy(), nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("the fake stored a %T that is no object: %w", obj, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

func (a *API) list(action clienttesting.Action) (bool, runtime.Object, error) {
	handled, obj, err := clienttesting.ObjectReaction(a.dyn.Tracker())(action)
	if err != nil || !handled {
		return handled, obj, err
	}
	l, err := meta.ListAccessor(obj)
	if err != nil {
		return true, nil, err
	}
	a.mu.Lock()
	l.SetResourceVersion(strconv.FormatInt(a.rv, 10))
	a.mu.Unlock()
	return true, obj, nil
}

// record logs ev and tells it to the watches; a.mu is held.
func (a *API) record(gvr schema.GroupVersionResource, ev event) {
	h := a.of(gvr)
	h.events = append(h.events, ev)
	if over := len(h.events) - a.opts.History; over > 0 {
		h.lost = h.events[over-1].rv
		h.events = append(h.events[:0], h.events[over:]...)
	}
	for w := range h.watches {
		w.tell(ev)
	}
}

func (a *API) of(gvr schema.GroupVersionResource) *history {
	h := a.history[gvr]
	if h == nil {
		h = &history{watches: map[*watcher]struct{}{}}
		a.history[gvr] = h
	}
	return h
}

// watch serves a watch of gvr in namespace ("" for all) from the
// resourceVersion in opts: the events since ("" and "0": from now on),
// then the live ones. From before the history, the stream is one ERROR
// event, 410 Expired, as an API server's watch cache answers.
func (a *API) watch(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (io.ReadCloser, error) {
	if a.opts.OnWatch != nil {
		a.opts.OnWatch(gvr, opts)
	}
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the label selector %q: %v", opts.LabelSelector, err))
	}
	w := newWatcher(namespace, sel, a.opts.WatchFilter)
	a.mu.Lock()
	from := a.rv
	if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		if from, err = strconv.ParseInt(opts.ResourceVersion, 10, 64); err != nil {
			a.mu.Unlock()
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the resourceVersion %q is not one of this API's", opts.ResourceVersion))
		}
	}
	h := a.of(gvr)
	if from < h.lost {
		a.mu.Unlock()
		status := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, h.lost+1)).ErrStatus
		w.tell(event{typ: watch.Error, obj: statusObject(status)})
		w.end()
		return w.stream(ctx, func() {}), nil
	}
	for _, ev := range h.events {
		if ev.rv > from {
			w.tell(ev)
		}
	}
	h.watches[w] = struct{}{}
	a.mu.Unlock()
	return w.stream(ctx, func() {
		a.mu.Lock()
		delete(h.watches, w)
		a.mu.Unlock()
	}), nil
}

func statusObject(s metav1.Status) *unstructured.Unstructured {
	s.Kind, s.APIVersion = "Status", "v1"
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&s)
	if err != nil {
		m = map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": int64(s.Code), "reason": string(s.Reason), "message": s.Message}
	}
	return &unstructured.Unstructured{Object: m}
}
