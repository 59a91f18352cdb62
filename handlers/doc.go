// Package handlers is the public import path of what a handler sees, kept
// for users: code written against github.com/kopfgo/kopfgo/handlers keeps
// compiling. The types, constants, errors and functions here are the
// engine's own (internal/handlers), re-exported under the same names, so a
// handlers.Change and a kopfgo.Change are one type and errors.Is holds
// across both paths.
//
// A user finds here the typed arguments handlers receive (Change, Object,
// Attempt, Spawn, WatchEvent, Admission, Activity), the function type of
// each kind, the per-object Memo, the errors a handler returns or is
// stopped with (TemporaryError, PermanentError, ErrOperatorExiting, …), the
// errors modes and the filter markers. New code may import kopfgo alone:
// it re-exports the same types.
//
// Removed from this path: NewObject, which named an internal type
// (resources.Resource), and NewSpawn with its SpawnEnv, whose stop signal
// only the daemons machinery can give: they build handler arguments for the
// engine only; tests build them with kopfgotest.NewObject and
// kopfgotest.NewSpawn.
package handlers
