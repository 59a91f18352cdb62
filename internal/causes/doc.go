// Package causes turns "this object was modified" into what happened to it:
// created, updated, deleted, resumed after a restart, or nothing worth
// handling, with Kopf's rules and in Kopf's order (compat: handlers-causes).
//
// Watch events cannot say this themselves: an ADDED event may be a new object
// or an old one seen again after a restart, and a MODIFIED event may be a spec
// change, a status write, or the operator's own bookkeeping. The answer comes
// from the object alone (its deletion mark and finalizers) and from its
// essence compared with the last handled one (package diffbase), so it is the
// same in every process that looks at the same object.
//
// The package also reads and writes the operator's finalizer on an object;
// when it is added or removed is decided by the reactor's plan
// (internal/plan).
//
// Everything here is pure: no I/O, no clock, no logging. It is internal,
// as the engine is: users meet its Reason as kopfgo.Reason, and the whole
// package under its public import path, package causes, which re-exports it.
package causes
