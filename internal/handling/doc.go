// Package handling is the engine behind internal/handlers: handler specs and
// their options (Handler), the registry that validates registrations in one
// path, filters and matching, the selection of handlers for a cause, and the
// execution of Kopf's handling cycle, a round at a time (one handler at a
// time, fewest retries first, retries and backoffs persisted on the object,
// TemporaryError and PermanentError, timeouts, errors modes, panics turned
// into errors, sub-handlers), with the framework's status.conditions that a
// cycle leaves, which whoever sends the patch merges into the object's list
// (conditions.go). It also runs watching handlers (HandleEvent), activities
// (RunActivity) and admission handlers (ServeAdmission), and judges the
// attempts of daemons, timers and indexers by the rules of its own handlers
// (Judge).
//
// It is apart from internal/handlers so that the types a handler sees
// (re-exported by kopfgo) stay readable in one sitting; the reactor,
// daemons, indexing, the admission server, the root package's options, the
// test kit and `kopfgo inspect` (which reads the conditions) are its only
// users.
//
// Execution does no API calls: it reads progress from the object's body and
// writes progress, results and the handlers' own patches into one patch that
// the reactor applies. That is what lets a kopfgo operator be killed at any
// moment and carry on where it stopped. What it keeps on the object (the
// last-handled essence, the progress records, the touch-dummy) it reads
// and writes through one interface, Store (store.go), which the reactor
// uses too.
//
// Admission handlers (admission.go) are answered once per request, never
// retried: ServeAdmission runs those of one AdmissionReview and gathers
// their verdict, warnings and mutations; internal/admission serves them.
//
// Every handler kind embeds one spec, Handler (its id, options and
// filters), and every registration goes through one validation
// (registration.go), so that a mistake reads the same in every kind.
package handling
