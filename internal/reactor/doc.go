// Package reactor turns watch events into handling cycles.
//
// One watcher (a client-go informer) runs per served resource and namespace.
// Its events only wake the object's worker: there is at most one worker per
// object, objects are processed in parallel, and a worker always processes
// the latest known state of its object, so several events that arrive while
// a handler runs collapse into one pass. Causes are derived from the state
// (the object against its stored diff-base), never from the event type.
//
// After each of its own patches the worker waits until the watch delivers
// the patched version (or the consistency timeout passes) before it runs
// state-dependent handlers again, so handlers never run twice on a stale
// body. Handlers that are delayed (retries, backoffs) are woken by a "touch"
// patch once their delay passes, exactly as Kopf does, so that the wake-up
// goes through the same path as any other change.
package reactor
