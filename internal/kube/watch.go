package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/internal/unjson"
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
		src.codec = c.watching.codecOf(res) // the lists' and watches' of the resource, whose objects the informers mix
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

// rawWatcher lists and watches, decoding each response once with unjson.
// The dynamic client scans every watch event four times (to frame it, to
// decode the envelope, to sniff the object's kind, to decode the object)
// and every list twice, which made decoding the operator's largest CPU cost.
type rawWatcher struct {
	rest rest.Interface
	// codecs are the compact objects' codecs, one per resource (its
	// String), made on first use and kept for the client's life.
	codecs sync.Map
}

// codecOf is the codec of a resource's compact objects, shared by all its
// lists and watches: of every namespace watched apart, of every shard
// served apart. Their objects have one shape, so one dictionary serves
// them, and each codec holds an encoder's tables and its decoders (about
// 1 MB, measured in the scale-out bench's heap profiles): a replica with
// 12 shards' watches of one resource held 12 of them, an operator of 50
// namespaces 50.
func (r *rawWatcher) codecOf(res resources.Resource) *codec {
	k, _ := r.codecs.LoadOrStore(res.String(), &codec{})
	return k.(*codec)
}

func newRawWatcher(cfg *rest.Config) (*rawWatcher, error) {
	rc, err := newRawREST(cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot create the watching client: %w", err)
	}
	return &rawWatcher{rest: rc}, nil
}

// collection is the resource's objects in a namespace ("" for all).
func (r *rawWatcher) collection(res resources.Resource, namespace string) rawCollection {
	return rawCollection{rest: r.rest, res: res, path: resourcePath(res, namespace, "", "")}
}

type rawCollection struct {
	rest rest.Interface
	res  resources.Resource
	path string
	// dropManagedFields removes them from each listed object as soon as it
	// is decoded, so that they never take memory for the whole list.
	dropManagedFields bool
	// codec compresses compact objects (ListCompact, WatchCompact).
	codec *codec
}

func (c rawCollection) request(opts *metav1.ListOptions) *rest.Request {
	return c.rest.Get().AbsPath(c.path).SpecificallyVersionedParams(opts, metav1.ParameterCodec, metav1.SchemeGroupVersion)
}

// List reads the response as it arrives, item by item: a list of thousands
// of objects is tens of megabytes of JSON, which reading it whole first
// would hold (several times over, as the buffer grows) on top of the
// decoded objects.
func (c rawCollection) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	body, err := c.request(&opts).Stream(ctx)
	if err != nil {
		return nil, err // a refusal by the API server is its StatusError
	}
	defer func() { _ = body.Close() }()
	// Never nil, even when empty, as the dynamic client's.
	list := &unstructured.UnstructuredList{Items: []unstructured.Unstructured{}}
	dec := unjson.NewDecoder(body)
	rest, err := dec.DecodeStreaming("items", func(v any) error {
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("item %d is %T, not an object", len(list.Items), v)
		}
		item := unstructured.Unstructured{Object: obj}
		if c.dropManagedFields {
			DropManagedFields(&item)
		}
		list.Items = append(list.Items, item)
		return nil
	})
	if err == nil {
		err = endOfList(dec)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the list of %s: %w", c.res, err)
	}
	list.Object = rest
	fillItemKinds(list)
	return list, nil
}

// endOfList checks that nothing follows a list's value in its response.
func endOfList(dec *unjson.Decoder) error {
	_, err := dec.Decode()
	switch {
	case err == io.EOF:
		return nil
	case err == nil:
		return errors.New("another value follows it")
	}
	return err
}

// fillItemKinds gives the items of a list of a built-in resource their kind
// and apiVersion, which the API server leaves out; handlers see them in
// watch events, so they are filled in from the list's own.
func fillItemKinds(list *unstructured.UnstructuredList) {
	apiVersion, _ := list.Object["apiVersion"].(string)
	kind, _ := list.Object["kind"].(string)
	kind = strings.TrimSuffix(kind, "List")
	if kind == "" {
		return
	}
	for _, it := range list.Items {
		if it.Object["kind"] == nil && it.Object["apiVersion"] == nil {
			it.Object["kind"], it.Object["apiVersion"] = kind, apiVersion
		}
	}
}

// Watch starts a stream; a refusal by the API server is its StatusError.
func (c rawCollection) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	body, err := c.request(&opts).Stream(ctx)
	if err != nil {
		return nil, err
	}
	return newRawStream(ctx, body), nil
}

// rawStream relays a watch response's events as they are decoded. ctx is the
// request's: its end ends the stream quietly.
type rawStream struct {
	body io.ReadCloser
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
	// compact, when set, keeps the events' objects compact (compact.go).
	compact *compactOptions
}

func newRawStream(ctx context.Context, body io.ReadCloser) *rawStream {
	s := newRawStreamOf(body)
	go s.run(ctx)
	return s
}

// newRawStreamOf makes a stream that its caller runs.
func newRawStreamOf(body io.ReadCloser) *rawStream {
	return &rawStream{body: body, out: make(chan watch.Event), stop: make(chan struct{})}
}

// Stop ends the stream; closing the body unblocks a pending read.
func (s *rawStream) Stop() {
	s.once.Do(func() {
		close(s.stop)
		_ = s.body.Close()
	})
}

func (s *rawStream) ResultChan() <-chan watch.Event { return s.out }

func (s *rawStream) run(ctx context.Context) {
	defer close(s.out)
	defer s.Stop()
	dec := unjson.NewDecoder(s.body)
	for {
		ev, err := s.next(dec)
		var ue undecodableError
		if errors.As(err, &ue) {
			err = ue.err
			if !s.stopped() && ctx.Err() == nil && !endOfStream(err) {
				s.send(errorEvent(fmt.Errorf("cannot decode an event of the watch stream: %w", err)))
			}
			return
		}
		if err != nil {
			s.send(errorEvent(fmt.Errorf("cannot read an event of the watch stream: %w", err)))
			return
		}
		if !s.send(ev) {
			return
		}
	}
}

// undecodableError is an error of next that comes from the stream itself
// (its end, or JSON that is no value) rather than from an event.
type undecodableError struct{ err error }

func (e undecodableError) Error() string { return e.err.Error() }
func (e undecodableError) Unwrap() error { return e.err }

// next reads the next event.
func (s *rawStream) next(dec *unjson.Decoder) (watch.Event, error) {
	if s.compact != nil {
		b, err := dec.DecodeRaw()
		if err != nil {
			return watch.Event{}, undecodable(err)
		}
		return compactEvent(b, *s.compact)
	}
	v, err := dec.Decode()
	if err != nil {
		return watch.Event{}, undecodable(err)
	}
	return toEvent(v)
}

func undecodable(err error) error { return undecodableError{err} }

func (s *rawStream) send(ev watch.Event) bool {
	select {
	case s.out <- ev:
		return true
	case <-s.stop:
		return false
	}
}

func (s *rawStream) stopped() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// endOfStream tells a stream that ended, cleanly or cut off (by the server,
// a proxy or the network), from one that carried something unreadable: the
// informer simply watches again after the former.
func endOfStream(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err)
}

// toEvent reads one decoded event, {"type": ..., "object": {...}}. An ERROR
// event's object is a Status, which the informer turns into an error (410
// Gone: list again).
func toEvent(v any) (watch.Event, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return watch.Event{}, fmt.Errorf("the event is %T, not an object", v)
	}
	typ, _ := m["type"].(string)
	obj, ok := m["object"].(map[string]any)
	if !ok {
		return watch.Event{}, fmt.Errorf("the %q event's object is %T, not an object", typ, m["object"])
	}
	switch t := watch.EventType(typ); t {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		return watch.Event{Type: t, Object: &unstructured.Unstructured{Object: obj}}, nil
	case watch.Error:
		status := &metav1.Status{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, status); err != nil {
			return watch.Event{}, fmt.Errorf("the error event's object is not a Status: %w", err)
		}
		return watch.Event{Type: t, Object: status}, nil
	default:
		return watch.Event{}, fmt.Errorf("unknown event type %q", typ)
	}
}

// errorEvent reports a broken stream as the API server reports its own
// failures, as an internal error.
func errorEvent(err error) watch.Event {
	status := apierrors.NewInternalError(err).ErrStatus
	return watch.Event{Type: watch.Error, Object: &status}
}
