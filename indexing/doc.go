// Package indexing is the public import path of in-memory indices, kept for
// users: code written against github.com/kopfgo/kopfgo/indexing keeps
// compiling. The indices and the indexers that fill them are the engine's
// (internal/indexing); Index and Func are re-exported here under the same
// names, so an indexing.Index and a kopfgo.Index are one type.
//
// A user finds here Index (Get, Has, Keys, All, Len) as handlers read it,
// and Func, an indexing function's type. Indices are registered with
// kopfgo.OnIndex or kopfgo.OnTypedIndex.
//
// Removed from this path, being the engine's and naming its internal types
// (handling.Registry, handling.Handler, handling.Cause): Register,
// RegisterAdapted, Indexer and Observation.
package indexing
