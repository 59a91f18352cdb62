package indexing

import (
	"iter"
	"sync"
)

// objectKey identifies an object among an index's contributors. The uid
// alone is unique; namespace and name keep the few objects without a uid
// apart.
type objectKey struct {
	Namespace, Name, UID string
}

// Index is a read-only mapping of keys to the values that objects gave under
// them (compat: indices-structure). It exists from registration on, empty until
// objects arrive; a key exists only while some object gives a value for it, so
// a key's values are never empty. Each object gives at most one value per key.
// Safe for concurrent use; lookups and updates are O(1) per key (compat:
// indices-performance).
type Index[K comparable, V any] struct {
	mu      sync.RWMutex
	stores  map[K]*store[V]
	reverse map[objectKey][]K // the keys each object gave, to update in O(k)
}

// store holds one key's values, one per object. Values sit in a slice for
// cheap copies on reading; pos finds an object's value for updates, which
// swap the last value into a removed one's place.
type store[V any] struct {
	vals []entry[V]
	pos  map[objectKey]int
}

type entry[V any] struct {
	obj objectKey
	val V
}

// newIndex returns an empty index.
func newIndex[K comparable, V any]() *Index[K, V] {
	return &Index[K, V]{stores: map[K]*store[V]{}, reverse: map[objectKey][]K{}}
}

// Get returns the values under key, one per object that gave it, in no
// particular order; nil when no object gives the key. The slice is a copy.
func (ix *Index[K, V]) Get(key K) []V {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	st, ok := ix.stores[key]
	if !ok {
		return nil
	}
	return st.values()
}

// Has reports whether some object gives the key.
func (ix *Index[K, V]) Has(key K) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	_, ok := ix.stores[key]
	return ok
}

// Len returns the number of keys.
func (ix *Index[K, V]) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.stores)
}

// Keys returns the keys, in no particular order.
func (ix *Index[K, V]) Keys() []K {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	keys := make([]K, 0, len(ix.stores))
	for k := range ix.stores {
		keys = append(keys, k)
	}
	return keys
}

// All iterates over a snapshot of the index: each key with its values.
func (ix *Index[K, V]) All() iter.Seq2[K, []V] {
	ix.mu.RLock()
	snap := make(map[K][]V, len(ix.stores))
	for k, st := range ix.stores {
		snap[k] = st.values()
	}
	ix.mu.RUnlock()
	return func(yield func(K, []V) bool) {
		for k, vs := range snap {
			if !yield(k, vs) {
				return
			}
		}
	}
}

func (st *store[V]) values() []V {
	out := make([]V, len(st.vals))
	for i, e := range st.vals {
		out[i] = e.val
	}
	return out
}

// replace makes the object's values exactly those of result: new keys are
// added, changed values replaced, and keys it no longer gives dropped
// (compat: indices-structure). An empty result leaves the object with no values.
func (ix *Index[K, V]) replace(obj objectKey, result map[K]V) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for k, v := range result {
		st, ok := ix.stores[k]
		if !ok {
			st = &store[V]{pos: map[objectKey]int{}}
			ix.stores[k] = st
		}
		st.set(obj, v)
	}
	prev := ix.reverse[obj]
	keys := prev[:0]
	for _, k := range prev {
		if _, ok := result[k]; !ok {
			ix.drop(k, obj)
		}
	}
	for k := range result {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		delete(ix.reverse, obj)
		return
	}
	ix.reverse[obj] = keys
}

// discard removes all the object's values, and the keys left empty.
func (ix *Index[K, V]) discard(obj objectKey) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, k := range ix.reverse[obj] {
		ix.drop(k, obj)
	}
	delete(ix.reverse, obj)
}

func (ix *Index[K, V]) drop(k K, obj objectKey) {
	st, ok := ix.stores[k]
	if !ok {
		return
	}
	st.remove(obj)
	if len(st.vals) == 0 {
		delete(ix.stores, k)
	}
}

func (st *store[V]) set(obj objectKey, v V) {
	if i, ok := st.pos[obj]; ok {
		st.vals[i].val = v
		return
	}
	st.pos[obj] = len(st.vals)
	st.vals = append(st.vals, entry[V]{obj: obj, val: v})
}

func (st *store[V]) remove(obj objectKey) {
	i, ok := st.pos[obj]
	if !ok {
		return
	}
	last := len(st.vals) - 1
	if i != last {
		st.vals[i] = st.vals[last]
		st.pos[st.vals[i].obj] = i
	}
	var zero entry[V]
	st.vals[last] = zero // let the value be collected
	st.vals = st.vals[:last]
	delete(st.pos, obj)
}
