// Package plan decides what one pass over an object does. The reactor
// gathers the facts of the pass (is the object being deleted, does it carry
// the finalizer, what happened to it, do handlers or daemons need the
// finalizer, ...), Pass turns them into one step, and the reactor carries
// that step out; once a handling cycle has run, After turns its outcome into
// the step that ends the pass. What the cycle must know of that end before
// it runs (whether a done deletion is held: Holds) is a rule here too, not
// a question put to After about an outcome still to come.
//
// Every finalizer and release decision of the operator is made here and
// nowhere else, so that the rules can be read, and tested, in one place
// against Kopf's (its reactor's processing and its cause detection).
//
// Everything here is pure: no I/O, no clock, no logging.
package plan
