package kubefake

import (
	"context"
	"encoding/json"
	"io"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// watcher is one watch's queue of events: the API tells it events under
// its lock and must never wait for the watch's reader, so the queue is
// unbounded, as the reader is the operator under test.
type watcher struct {
	namespace string
	selector  labels.Selector
	filter    watch.FilterFunc

	mu    sync.Mutex
	queue []event
	over  bool          // nothing follows the queue: the stream ends after it
	ready chan struct{} // poked when queue or over changes
}

func newWatcher(namespace string, selector labels.Selector, filter watch.FilterFunc) *watcher {
	return &watcher{namespace: namespace, selector: selector, filter: filter, ready: make(chan struct{}, 1)}
}

// tell queues ev if the watch selects it: its namespace, its labels (an
// object leaving the selection is not told as deleted, unlike by an API
// server), and the API's filter. An ERROR event is always told.
func (w *watcher) tell(ev event) {
	if ev.typ != watch.Error {
		if w.namespace != "" && ev.obj.GetNamespace() != w.namespace || !w.selector.Matches(labels.Set(ev.obj.GetLabels())) {
			return
		}
		if w.filter != nil {
			if _, keep := w.filter(watch.Event{Type: ev.typ, Object: ev.obj}); !keep {
				return
			}
		}
	}
	w.mu.Lock()
	w.queue = append(w.queue, ev)
	w.mu.Unlock()
	w.poke()
}

// end ends the stream once what is queued is written.
func (w *watcher) end() {
	w.mu.Lock()
	w.over = true
	w.mu.Unlock()
	w.poke()
}

func (w *watcher) poke() {
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

func (w *watcher) take() ([]event, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	q, over := w.queue, w.over
	w.queue = nil
	return q, over
}

// stream writes the queued events as a watch response's body, one JSON
// object a line, until the watch ends, the body is closed, or ctx (the
// request's) ends; then it calls done. Its goroutine is the request's: it
// ends with the body, which the client closes.
func (w *watcher) stream(ctx context.Context, done func()) io.ReadCloser {
	pr, pw := io.Pipe()
	body := &closer{ReadCloser: pr, closed: make(chan struct{})}
	go func() {
		defer done()
		for {
			select {
			case <-w.ready:
			case <-body.closed:
				return
			case <-ctx.Done():
				_ = pw.CloseWithError(ctx.Err())
				return
			}
			q, over := w.take()
			for _, ev := range q {
				data, err := json.Marshal(map[string]any{"type": ev.typ, "object": ev.obj})
				if err != nil {
					_ = pw.CloseWithError(err)
					return
				}
				if _, err := pw.Write(append(data, '\n')); err != nil {
					return // the body is closed
				}
			}
			if over {
				_ = pw.Close()
				return
			}
		}
	}()
	return body
}

// closer tells the stream's writer that its reader has gone.
type closer struct {
	io.ReadCloser
	once   sync.Once
	closed chan struct{}
}

func (c *closer) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.ReadCloser.Close()
}
