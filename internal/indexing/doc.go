// Package indexing keeps in-memory indices of watched objects, as Kopf's
// @kopf.index does (the manual's "In-memory indexing"; compat: indices).
//
// An indexing function turns each object into a map of keys to one value;
// the index maps every key to the values of all the objects that produced
// it. The index is rebuilt from watch events alone: an object's values are
// replaced on every event, and removed when the object is deleted or stops
// matching the indexer's filters, so that the index always describes the
// cluster as the operator sees it, without any API call of its own.
//
// The reactor feeds indexers before it runs any handler of the object, and
// holds every handler of the operator until all indices have seen the
// initial listings, so that even the first creation handler sees complete
// indices (compat: indices-complete).
//
// It is internal, as the reactor's part: users meet only Index and Func
// (as kopfgo.Index, or under the public import path, package indexing) and
// register indices with kopfgo.OnIndex and kopfgo.OnTypedIndex.
package indexing
