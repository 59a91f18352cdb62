// Package persistence keeps each handler's progress on the object it handles,
// in exactly the form Kopf keeps it.
//
// The point is compatibility: an operator ported from Kopf to kopfgo must take
// over objects in the middle of a handling cycle (a handler retrying, a
// sub-handler pending) without re-running what already succeeded and without
// losing retry counts or delays. That is only possible when both frameworks
// read and write the same keys with the same values, so this package
// reproduces Kopf's record JSON byte for byte (field order, omitted fields,
// timestamp format, Python's ASCII-only string escaping), Kopf's annotation
// key naming (via internal/conventions), and the behaviour of Kopf's
// storages: what each one reads, writes, purges and hides from the diff-base.
//
// Storages are pluggable, as Kopf's ProgressStorage is: a Storage reads from
// the object's body and writes into the cycle's merge patch, never doing I/O
// itself, so that all of a cycle's changes go out in one API call. Custom
// storages (a ConfigMap, a database) implement the same interface.
package persistence
