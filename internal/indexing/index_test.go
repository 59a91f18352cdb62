package indexing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
)

func obj(name string) objectKey { return objectKey{Namespace: "ns", Name: name, UID: "uid-" + name} }

func sorted(vs []string) []string { slices.Sort(vs); return vs }

func TestIndexStructure(t *testing.T) {
	// The manual's §25.2 example: three objects, two keys.
	ix := newIndex[string, string]()
	ix.replace(obj("1"), map[string]string{"key1": "valueA"})
	ix.replace(obj("2"), map[string]string{"key1": "valueB"})
	ix.replace(obj("3"), map[string]string{"key2": "valueC"})
	if got := sorted(ix.Get("key1")); !slices.Equal(got, []string{"valueA", "valueB"}) {
		t.Errorf("key1 = %v", got)
	}
	if got := ix.Get("key2"); !slices.Equal(got, []string{"valueC"}) {
		t.Errorf("key2 = %v", got)
	}
	if ix.Len() != 2 || !ix.Has("key1") || ix.Has("key3") || ix.Get("key3") != nil {
		t.Errorf("len %d, keys %v", ix.Len(), ix.Keys())
	}

	// Re-indexing replaces an object's contribution: one value per key.
	ix.replace(obj("1"), map[string]string{"key1": "valueA2", "key3": "valueA3"})
	if got := sorted(ix.Get("key1")); !slices.Equal(got, []string{"valueA2", "valueB"}) {
		t.Errorf("key1 after re-indexing = %v", got)
	}
	// An object that stops giving a key leaves it; keys never hold nothing
	// (compat: indices-structure).
	ix.replace(obj("3"), map[string]string{})
	if ix.Has("key2") {
		t.Errorf("key2 still exists with %v after its only object left", ix.Get("key2"))
	}
	ix.discard(obj("1"))
	ix.discard(obj("2"))
	if ix.Len() != 0 || len(ix.reverse) != 0 {
		t.Errorf("index not empty after all objects left: %v / %v", ix.Keys(), ix.reverse)
	}
}

func TestIndexAllIsASnapshot(t *testing.T) {
	ix := newIndex[string, int]()
	for i := range 5 {
		ix.replace(obj(fmt.Sprint(i)), map[string]int{"k": i, fmt.Sprint("own", i): i})
	}
	n := 0
	for k, vs := range ix.All() {
		ix.discard(obj("0")) // changes during iteration do not disturb it
		n++
		if k == "k" && len(vs) != 5 {
			t.Errorf("k has %d values, want 5", len(vs))
		}
	}
	if n != 6 {
		t.Errorf("iterated %d keys, want 6", n)
	}
}

func TestIndexIsSafeForConcurrentUse(t *testing.T) {
	ix := newIndex[int, int]()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 1000 {
				o := obj(fmt.Sprint(w, "-", i%10))
				ix.replace(o, map[int]int{i % 7: i})
				_ = ix.Get(i % 7)
				if i%3 == 0 {
					ix.discard(o)
				}
			}
		})
	}
	wg.Wait()
	for k, vs := range ix.All() {
		if len(vs) == 0 {
			t.Errorf("key %d has no values", k)
		}
	}
}

// feed drives an indexer as the reactor does.
type feed struct {
	t   *testing.T
	ix  *indexer[string, string]
	now time.Time
	log *strings.Builder
}

func newFeed(t *testing.T, fn Func[string, string], configure func(*handling.Handler)) *feed {
	_, runner, err := Register(&handling.Registry{}, "pods", fn, func(h *handling.Handler) {
		h.ID = "idx"
		if configure != nil {
			configure(h)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return &feed{t: t, ix: runner.(*indexer[string, string]), now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), log: &strings.Builder{}}
}

func pod(name string, labels map[string]any) map[string]any {
	meta := map[string]any{"name": name, "namespace": "ns", "uid": "uid-" + name}
	if labels != nil {
		meta["labels"] = labels
	}
	return map[string]any{"metadata": meta}
}

func (f *feed) event(body map[string]any, deleted bool) {
	f.ix.Observe(context.Background(), Observation{
		Deleted: deleted, Now: f.now, DefaultBackoff: time.Minute,
		Cause: &handling.Cause{Body: body, Logger: slog.New(slog.NewTextHandler(f.log, nil)), Memo: &handlers.Memo{}},
	})
}

func byName(ctx context.Context, o *handlers.Object) (map[string]string, error) {
	return map[string]string{o.Labels["app"]: o.Name}, nil
}

func TestIndexerFollowsEventsAndFilters(t *testing.T) {
	f := newFeed(t, byName, func(h *handling.Handler) { h.Filters.AddLabels(map[string]any{"app": handlers.Present}) })
	f.event(pod("p1", map[string]any{"app": "x"}), false)
	f.event(pod("p2", map[string]any{"app": "x"}), false)
	f.event(pod("p3", nil), false) // filtered out
	if got := sorted(f.ix.index.Get("x")); !slices.Equal(got, []string{"p1", "p2"}) {
		t.Fatalf("x = %v", got)
	}
	// Stops matching the filters: removed at once (compat: indices-removal).
	f.event(pod("p1", nil), false)
	if got := f.ix.index.Get("x"); !slices.Equal(got, []string{"p2"}) {
		t.Errorf("x after p1 lost its label = %v", got)
	}
	// Deleted: removed, and the key with it (compat: indices-structure).
	f.event(pod("p2", map[string]any{"app": "x"}), true)
	if f.ix.index.Has("x") {
		t.Errorf("x still exists: %v", f.ix.index.Get("x"))
	}
}

func TestIndexerNilResultKeepsTheOldValues(t *testing.T) {
	// (compat: indices-none): nil skips; an empty map is a real (empty) result.
	result := map[string]string{"k": "v"}
	f := newFeed(t, func(ctx context.Context, o *handlers.Object) (map[string]string, error) { return result, nil }, nil)
	f.event(pod("p", nil), false)
	result = nil
	f.event(pod("p", nil), false)
	if !f.ix.index.Has("k") {
		t.Errorf("a nil result dropped the object's values")
	}
	result = map[string]string{}
	f.event(pod("p", nil), false)
	if f.ix.index.Has("k") {
		t.Errorf("an empty result kept the object's values")
	}
}

func TestIndexerErrorModes(t *testing.T) {
	// (compat: indices-errors). Each case: the object is indexed, then fails once, then its
	// indexer would succeed again; we look at the index after the failure,
	// after an event within the exclusion, and after one past it.
	tests := []struct {
		name      string
		err       error
		configure func(*handling.Handler)
		// whether the object's value is in the index at each step
		afterFailure, within, after bool
		log                         string
	}{
		{"ignored by default: stale values stay", errors.New("oops"), nil, true, true, true, "failed with an exception and will ignore it"},
		{"panic is an error too", nil, nil, true, true, true, "panic: kaboom"},
		{"temporary error: excluded for its delay", &handlers.TemporaryError{Err: errors.New("later"), Delay: 2 * time.Second}, nil, false, false, true, "Indexer 'idx' failed temporarily: later"},
		{"errors mode temporary: excluded for the backoff", errors.New("x"),
			func(h *handling.Handler) { h.Errors = handlers.ErrorsTemporary; h.Backoff = 2 * time.Second }, false, false, true, "failed with an exception and will try again in 2 seconds: x"},
		{"permanent error: excluded for good", &handlers.PermanentError{Err: errors.New("never")}, nil, false, false, false, "failed permanently: never"},
		{"errors mode permanent", errors.New("x"), func(h *handling.Handler) { h.Errors = handlers.ErrorsPermanent }, false, false, false, "failed with an exception and will stop now: x"},
		{"retries escalate to permanent", &handlers.TemporaryError{Err: errors.New("later"), Delay: 2 * time.Second},
			func(h *handling.Handler) { h.Retries = 1 }, false, false, false, "failed temporarily but will exceed 1 retries: later"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failing := false
			f := newFeed(t, func(ctx context.Context, o *handlers.Object) (map[string]string, error) {
				if failing {
					if tt.err == nil {
						panic("kaboom")
					}
					return nil, tt.err
				}
				return map[string]string{"k": o.Name}, nil
			}, tt.configure)
			p := pod("p", nil)
			f.event(p, false)
			failing = true
			f.event(p, false)
			has := func() bool { return f.ix.index.Has("k") }
			if has() != tt.afterFailure {
				t.Errorf("after the failure: indexed = %v, want %v", has(), tt.afterFailure)
			}
			failing = false
			f.now = f.now.Add(time.Second)
			f.event(p, false)
			if has() != tt.within {
				t.Errorf("within the exclusion: indexed = %v, want %v", has(), tt.within)
			}
			f.now = f.now.Add(2 * time.Second)
			f.event(p, false)
			if has() != tt.after {
				t.Errorf("past the exclusion: indexed = %v, want %v", has(), tt.after)
			}
			if !strings.Contains(f.log.String(), "Indexer 'idx' ") || !strings.Contains(f.log.String(), tt.log) {
				t.Errorf("log lacks %q:\n%s", tt.log, f.log)
			}
			// A deleted object's failure is forgotten with it.
			f.event(p, true)
			if len(f.ix.fails) != 0 {
				t.Errorf("failures kept for a deleted object: %v", f.ix.fails)
			}
		})
	}
}

// A retry that could not happen before the indexer's Timeout fails now,
// as every handler's does (Kopf runs indexers through the same execution):
// the delay counts, and the timeout is told before the retries.
func TestIndexerFailsARetryPastItsTimeout(t *testing.T) {
	f := newFeed(t, func(ctx context.Context, o *handlers.Object) (map[string]string, error) {
		return nil, &handlers.TemporaryError{Err: errors.New("later"), Delay: 2 * time.Second}
	}, func(h *handling.Handler) { h.Timeout = time.Second; h.Retries = 1 })
	p := pod("p", nil)
	f.event(p, false)
	if want := "Indexer 'idx' failed temporarily but will time out after 1 seconds: later"; !strings.Contains(f.log.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, f.log)
	}
	if fl := f.ix.fails[keyOf(p)]; fl == nil || !fl.permanent {
		t.Errorf("failure = %+v, want the object excluded for good", fl)
	}
}

func TestRegisterNamesTheIndexer(t *testing.T) {
	tests := []struct {
		name      string
		fn        Func[string, string]
		configure func(*handling.Handler)
		want      string
	}{
		{"closure without id", func(ctx context.Context, o *handlers.Object) (map[string]string, error) { return nil, nil }, nil, "give it kopfgo.ID"},
		{"value without field", byName, func(h *handling.Handler) { h.Filters.SetValue("x") }, "need a field"},
		{"bad resource", byName, func(h *handling.Handler) { h.Filters.SetField("spec.x") }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			index, ix, err := Register(&handling.Registry{}, "pods", tt.fn, tt.configure)
			if tt.want == "" {
				if err != nil || ix.Spec().ID != "byName" || !slices.Equal(ix.Spec().Field, []string{"spec", "x"}) {
					t.Errorf("err = %v, spec = %+v; want the name without a field suffix (compat: indices-declare)", err, ix.Spec())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `OnIndex("pods") indexer`) {
				t.Errorf("err = %v, want it to name the indexer and mention %q", err, tt.want)
			}
			if index == nil {
				t.Errorf("no index returned with the error")
			}
		})
	}
}
