package indexing

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
)

// Func is an indexing function: the keys and values an object contributes.
// A nil map (with a nil error) keeps what the object gave before, as Kopf's
// None does (compat: indices-none); an empty map removes it. It must be fast and free of
// side effects: it runs on every watch event of every matching object, and
// all handlers wait for it at startup.
type Func[K comparable, V any] func(ctx context.Context, o *handlers.Object) (map[K]V, error)

// Indexer is an indexer as the reactor sees it, whatever its types.
type Indexer interface {
	// Spec is the indexer's registration: id, selector, filters, options.
	Spec() *handling.Handler
	// Observe updates the index from one watch event of an object.
	Observe(ctx context.Context, ev Observation)
}

// Observation is one watch event of an object, for the indexers.
type Observation struct {
	// Deleted: the object is gone, and so must be its values.
	Deleted bool
	// Cause carries the object (Body, Resource, Logger, Memo; a Patch that
	// is never applied) and evaluates the filters.
	Cause *handling.Cause
	Now   time.Time
	// DefaultBackoff excludes an object after an error in the temporary
	// mode when the indexer has no Backoff of its own.
	DefaultBackoff time.Duration
}

// indexer maintains one Index from the events of its resource: the
// reactor sees it as an Indexer, handlers see its Index.
type indexer[K comparable, V any] struct {
	spec  *handling.Handler
	fn    Func[K, V]
	index *Index[K, V]

	mu    sync.Mutex
	fails map[objectKey]*failure // objects excluded after errors
}

// failure is the in-memory retry state of one object; never persisted, and
// forgotten on success (compat: indices-errors).
type failure struct {
	retries   int
	started   time.Time
	until     time.Time
	permanent bool
}

// newIndexer returns an indexer running fn under the options in spec (see
// Register).
func newIndexer[K comparable, V any](spec *handling.Handler, fn Func[K, V]) *indexer[K, V] {
	return &indexer[K, V]{spec: spec, fn: fn, index: newIndex[K, V](), fails: map[objectKey]*failure{}}
}

// Spec returns the indexer's registration.
func (ix *indexer[K, V]) Spec() *handling.Handler { return ix.spec }

// Observe indexes the object, or removes it from the index when it is
// deleted, stops matching the filters (compat: indices-removal), or fails (compat: indices-errors).
func (ix *indexer[K, V]) Observe(ctx context.Context, ev Observation) {
	c := ev.Cause
	key := keyOf(c.Body)
	if ev.Deleted {
		ix.index.discard(key)
		ix.mu.Lock()
		delete(ix.fails, key)
		ix.mu.Unlock()
		return
	}
	if !ix.spec.MatchesObject(c) {
		ix.index.discard(key)
		return
	}
	ix.mu.Lock()
	f := ix.fails[key]
	excluded := f != nil && (f.permanent || ev.Now.Before(f.until))
	ix.mu.Unlock()
	if excluded {
		return // its values went with the failure
	}

	o := *c.Object()
	o.Param = ix.spec.Param
	result, err := ix.call(ctx, &o)
	if err == nil {
		ix.mu.Lock()
		delete(ix.fails, key)
		ix.mu.Unlock()
		if result != nil {
			ix.index.replace(key, result)
		}
		c.Logger.Debug(fmt.Sprintf("Indexer '%s' succeeded.", ix.spec.ID))
		return
	}
	ix.fail(key, err, ev)
}

func (ix *indexer[K, V]) call(ctx context.Context, o *handlers.Object) (result map[K]V, err error) {
	defer func() {
		if v := recover(); v != nil {
			result, err = nil, &handlers.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return ix.fn(ctx, o)
}

// fail applies the errors mode: ignored errors keep the stale values; the
// others remove them and exclude the object, for the error's delay (or the
// backoff) or for good. Retries and Timeout, counted from the first failure,
// turn a temporary exclusion into a permanent one.
func (ix *indexer[K, V]) fail(key objectKey, err error, ev Observation) {
	ix.mu.Lock()
	f := ix.fails[key]
	if f == nil {
		f = &failure{started: ev.Now}
	}
	// The verdict and its lines are those of every handler, as Kopf runs
	// its indexers through the same execution: the object stays out of the
	// index while it fails.
	v := handling.Judge(ix.spec, handling.Title("Indexer", ix.spec.ID), err, f.retries+1, ev.Now.Sub(f.started), ev.DefaultBackoff)
	ignored := v.Done && !v.Failed
	if ignored {
		delete(ix.fails, key)
	} else {
		f.retries++
		f.permanent = v.Failed
		f.until = ev.Now.Add(v.Delay)
		ix.fails[key] = f
	}
	ix.mu.Unlock()
	if !ignored {
		ix.index.discard(key)
	}
	v.Log(ev.Cause.Logger)
}

// keyOf returns the key of an object in the indices' bookkeeping.
func keyOf(body map[string]any) objectKey {
	meta := dicts.Map(body, "metadata")
	return objectKey{
		Namespace: dicts.String(meta, "namespace"),
		Name:      dicts.String(meta, "name"),
		UID:       dicts.String(meta, "uid"),
	}
}

// Register builds an indexer from a registration (the resource as the user
// wrote it, the function, the options), validated and recorded in reg as
// every handler is (Registry.AddIndex). The indexer is returned even with
// errors, so that its index exists; the errors, each naming the indexer,
// are returned too, and kept in reg for Run to report. It returns the index
// handlers read and the indexer as the reactor runs it.
func Register[K comparable, V any](reg *handling.Registry, resource string, fn Func[K, V], configure func(*handling.Handler)) (*Index[K, V], Indexer, error) {
	return RegisterAdapted(reg, resource, fn, nil, configure)
}

// RegisterAdapted is Register for a function fn that adapts the user's
// function named (a typed index): the index is named after named, as the
// adapters of all typed indices share one name. nil named is Register.
func RegisterAdapted[K comparable, V any](reg *handling.Registry, resource string, fn Func[K, V], named any, configure func(*handling.Handler)) (*Index[K, V], Indexer, error) {
	spec, err := reg.AddIndex(resource, fn, named, configure)
	ix := newIndexer(spec, fn)
	return ix.index, ix, err
}
