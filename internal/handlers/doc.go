// Package handlers is what a handler sees: the typed argument structs
// handlers receive instead of Kopf's kwargs (Change, Object, Attempt, Spawn,
// WatchEvent, Admission, Activity), the function types of each kind, the
// per-object Memo, the errors a handler returns or is stopped with
// (TemporaryError, PermanentError, ErrOperatorExiting, …) and the errors
// modes.
//
// It exports nothing else on purpose: how handlers are registered, selected,
// matched against filters and run with Kopf's semantics (retries, backoffs,
// timeouts, errors modes, sub-handlers, panics turned into errors) is the
// engine's business, in internal/handling, so that this package can be read
// in one sitting and only grows when handlers get something new. The root
// package kopfgo re-exports these types under the same names; prefer it.
//
// NewObject and NewSpawn build handler arguments outside a running operator
// (the daemons machinery and the test kit kopfgotest use them): Spawn keeps
// its link to the machinery (its stop signal, clock and patching) in
// unexported fields, so only this package can build one.
package handlers
