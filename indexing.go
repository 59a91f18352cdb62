package kopfgo

import (
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/indexing"
)

// Index is an in-memory index of watched objects (the manual's "In-memory
// indexing"; compat: indices): each key maps to the values the objects gave for
// it, one per object. A key exists only while some object gives it. It is
// read-only for handlers and safe for concurrent use; all indices are complete,
// from the initial listings, before any handler of the operator runs (compat:
// indices-complete), and an object's values go with the object, or when it
// stops matching the filters. Get(key) returns a copy of the key's values,
// in no particular order (nil when no object gives the key); Has(key)
// reports whether some object gives it; Keys and Len list and count the
// keys; All iterates over a snapshot, each key with its values.
type Index[K comparable, V any] = indexing.Index[K, V]

// IndexFunc computes what an object contributes to an index: a map of keys
// to one value each. nil keeps the object's earlier contribution (compat: indices-none);
// an empty map contributes nothing. For an unkeyed collection, use a single
// key (struct{}{}, say). It runs on every watch event of every matching
// object, before any handler: keep it fast and free of side effects. Its
// Object's Patch is never applied.
type IndexFunc[K comparable, V any] = indexing.Func[K, V]

// IndexOption configures an index: ID (its name), Param, Errors, Retries,
// Backoff, Timeout, and the filters.
type IndexOption interface{ applyIndex(*handling.Handler) }

// indexOnly is an option that fits indices only.
type indexOnly func(*handling.Handler)

func (o indexOnly) applyIndex(h *handling.Handler) { o(h) }

// Global makes an index see every object of its resource, on every
// replica. With sharding (Options.Sharding) an index otherwise sees only
// the objects of the shards its replica holds, as its handlers do; a global
// index holds the whole resource on every replica, so that a handler can
// look up any object, e.g. a parent in another shard: every replica then
// watches the whole resource (its watch cannot select its shards), at the
// memory and CPU of every object's events on every replica. That one watch
// goes on when the replica's shards change: a handover leaves the shards
// kept alone, as for the resources watched per shard. Without sharding
// every index sees every object anyway.
func Global() IndexOption { return indexOnly(func(h *handling.Handler) { h.Global = true }) }

// OnIndex registers an index of the resource's objects on r (kopfgo.On,
// op.On, or the Registrar a package's Register gets) and returns it. It is
// the Registrar's On.Index, written as a function because Go methods cannot
// have type parameters. Handlers use the index by closing over it:
//
//	var podsByParent *kopfgo.Index[string, string]
//
//	func Register(r kopfgo.Registrar) {
//		podsByParent = kopfgo.OnIndex(r, "v1/pods", byParent,
//			kopfgo.Labels{"parent": kopfgo.Present})
//		r.Create("kopfexamples", createFn)
//	}
//
//	func byParent(ctx context.Context, o *kopfgo.Object) (map[string]string, error) {
//		return map[string]string{o.Labels["parent"]: o.Name}, nil
//	}
//
//	func createFn(ctx context.Context, c *kopfgo.Change) (any, error) {
//		pods := podsByParent.Get(c.Name)
//		…
//	}
//
// Errors in fn are never retried in a loop (compat: indices-errors). By the errors mode,
// which is ErrorsIgnored for indexers: ignored errors are logged and keep
// the object's stale values; a PermanentError or ErrorsPermanent removes the
// object's values and excludes the object from this index for the life of
// the process; a TemporaryError or ErrorsTemporary removes them and
// excludes the object for the error's delay (or Backoff), after which its
// next event indexes it again. Retries and Timeout, counted from the first
// failure, make a temporary exclusion permanent; a success resets them.
func OnIndex[K comparable, V any](r Registrar, resource string, fn IndexFunc[K, V], opts ...IndexOption) *Index[K, V] {
	return index(r, resource, fn, nil, opts)
}

// index registers fn, or the typed function named that fn adapts.
func index[K comparable, V any](r Registrar, resource string, fn IndexFunc[K, V], named any, opts []IndexOption) *Index[K, V] {
	ix, runner, _ := indexing.RegisterAdapted(r.op.reg, resource, fn, named, func(h *handling.Handler) {
		for _, o := range opts {
			o.applyIndex(h)
		}
	}) // its mistakes are kept in the registry for Run
	r.op.mu.Lock()
	defer r.op.mu.Unlock()
	r.op.indexers = append(r.op.indexers, runner)
	return ix
}
