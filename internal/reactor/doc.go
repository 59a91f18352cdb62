// Package reactor turns watch observations into handling cycles.
//
// One watcher (a client-go informer) runs per served resource and namespace.
// Its store keeps each object compact, as JSON (kube.Compact): a pass
// decodes the latest state once, and an observation is decoded only for the
// indexers and watching handlers, which see every observation.
// Its observations only wake the object's worker: there is at most one
// worker per object, objects are processed in parallel, and a worker always
// processes the latest known state of its object, so several observations
// that arrive while a handler runs collapse into one pass. Causes are
// derived from the state (the object against its stored diff-base), never
// from the type of the observation.
//
// A pass reads, plans and acts: read gathers the facts (pass.go; what
// happened to the object and whether the handlers have it in scope is one
// call, internal/handling's Detector), the pure package internal/plan turns
// them into one step, and act carries the step out (pass.go, apply.go). After each of its own patches the worker waits
// until the watch delivers the patched version (or the consistency timeout
// passes) before it runs state-dependent handlers again, so handlers never
// run twice on a stale body. Handlers that are delayed (retries, backoffs)
// are woken by a touch patch once their delay passes, exactly as Kopf does,
// so that the wake-up goes through the same path as any other change.
//
// Files by stage: run.go (Run, Config, its Hooks and what a run holds),
// orchestration.go (which resources are served, following CRDs), watcher.go
// (the informer, indexers and watching handlers), worker.go (workers,
// per-object state, the pool and its bound, the slots), pass.go (read →
// plan → act), apply.go (patches), background.go (daemons and timers).
//
// One object's path from a watch event to its patch is listed, every
// file, in docs/architecture.md (the main line): internal/kube's watch →
// watcher.go (observe) → worker.go (notify, work, pass) → pass.go
// (process: read, with internal/handling's Detector; plan.Pass; for a
// Handle step the cycle (handle, handling.Cycle.Run) and plan.After; act)
// → apply.go (apply) → internal/kube's patch. What the operator keeps on
// the object (the diff-base, the progress records, the touch-dummy) is
// reached only through internal/handling's Store.
//
// Glossary, and the only words the code uses for these:
//
//   - observation: one watch notification of an object (listed, added,
//     modified, deleted). "Event" means a Kubernetes Event only (posted by
//     the poster, internal/posting); On.Event handlers keep Kopf's name, but
//     here they are the watching handlers, and they receive observations.
//   - watcher: the informer of one resource in one namespace (or all), with
//     the workers and states of the objects it observes.
//   - worker: what runs one object's passes, one at a time: a goroutine
//     while it works or sleeps for delayed handlers; while it waits only for
//     news it parks without one, and it retires when idle.
//   - state: what the operator keeps about one object between passes, in its
//     own memory and never on the object (consistency, resuming, throttling,
//     the user's Memo, the background). The Memo is the user's; the state
//     is the reactor's.
//   - pass: one run over an object's latest state: dispatch its queued
//     observations to the watching handlers, say goodbye to an object
//     deleted from the cluster (Kopf's last line about it), then read →
//     plan → act. Kopf's log lines of a pass are written by act, never by
//     the plan.
//   - facts, step: what plan.Pass takes and returns; plan.After ends a pass
//     whose cycle has run.
//   - cycle: one round of Kopf's handling cycle for a cause (handling.Cycle),
//     invoking at most one handler.
//   - pool: the goroutines that carry passes, so that grown stacks are
//     reused rather than kept by idle workers.
//   - background: an object's daemons and timers.
//   - touch: the dummy patch that wakes delayed handlers.
//   - changing, watching, spawning handlers: Kopf's kinds of handlers (On.Create
//     and the like; On.Event; daemons and timers). "Runner" is not a
//     reactor word: indexing.Indexer is an indexer as the reactor sees it.
package reactor
