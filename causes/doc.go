// Package causes is the public import path of cause detection, kept for
// users: code written against github.com/kopfgo/kopfgo/causes keeps
// compiling. The detection itself is the engine's (internal/causes), pure
// and re-exported here under the same names.
//
// A user finds here why a handler runs (Reason and its values: Create,
// Update, Delete, Resume, …), Detect and its Input for tools that replay
// the decision on stored bodies, and the finalizer helpers (HasFinalizer,
// AddFinalizer, RemoveFinalizer, IsDeleting). Every identifier the package
// exported before it moved is here.
package causes
