// Package handlers owns what a handler is and how it is run: the handler
// kinds and their options, the registry that validates registrations, the
// typed argument structs handlers receive instead of Kopf's kwargs, and the
// execution of one handling cycle with Kopf's semantics (one handler at a
// time, fewest retries first, retries and backoffs persisted on the object,
// TemporaryError and PermanentError, timeouts, errors modes, panics turned
// into errors).
//
// Execution does no API calls: it reads progress from the object's body and
// writes progress, results and the handlers' own patches into one patch that
// the reactor applies. That is what lets a kopfgo operator be killed at any
// moment and carry on where it stopped.
//
// Admission handlers (admission.go) are answered once per request, never
// retried: ServeAdmission runs those of one AdmissionReview and gathers
// their verdict, warnings and mutations; internal/admission serves them.
//
// Every handler kind embeds one spec, Handler (its id, options and
// filters), and every registration goes through one validation
// (registration.go), so that a mistake reads the same in every kind.
//
// The root package kopfgo re-exports the parts users need (the argument
// types, the errors, Memo); prefer it. The other exported names (Registry,
// Cycle, Select, Judge, Spawning, …) are for the framework's own packages:
// the reactor, daemons and indexing run handlers through them.
package handlers
