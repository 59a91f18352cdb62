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
// The root package kopfgo re-exports the stable parts; prefer it.
package handlers
