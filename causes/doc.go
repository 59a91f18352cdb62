// Package causes is the public import path of why a handler runs, kept for
// users: code that reads a handler's reason through
// github.com/kopfgo/kopfgo/causes keeps compiling. Reason and its values
// Create, Update, Delete and Resume are the engine's (internal/causes),
// re-exported under the same names, so a causes.Reason and a kopfgo.Reason
// are one type.
//
// The detection itself (Detect and its Input, the internal outcomes Noop,
// Gone and Free) and the finalizer helpers (HasFinalizer, AddFinalizer,
// RemoveFinalizer, IsDeleting) are the engine's only and are not
// re-exported: the operator decides and writes its finalizer itself, and
// no handler or registration names them.
package causes
