// Package diffbase decides what counts as a change of an object, the way Kopf
// decides it, and remembers the last state that was handled.
//
// Kubernetes says only that an object was modified, never what changed or
// whether the change matters. Kopf answers both with the object's *essence*
// (spec, labels, most annotations, and the fields that field handlers watch;
// never status, system metadata or the state written by Kopf-style operators)
// and with a copy of the last handled essence stored on the object itself (the
// diff-base). Comparing the two gives the cause of a cycle and the diff handed
// to update and field handlers; keeping the copy on the object means a
// restarted operator, or a Kopf operator taking over from kopfgo and back, sees
// the same history (compat: persistence-diffbase,
// persistence-diffbase-storages, persistence-diff).
//
// Everything here is pure: no I/O, no clock, no logging. The executor calls
// Build for every watch event of every object, so Build copies only what goes
// into the essence and leaves the rest of the body (managedFields, status,
// the stored diff-base itself) untouched.
//
// Values follow the shapes of JSON decoded into map[string]any: maps,
// []any, strings, bools, numbers and nil. Numbers compare by value, so an
// int64 from client-go's decoder equals the float64 or int64 read back from
// a stored diff-base; nil (and a nil map) means "absent", as None does in
// Kopf.
package diffbase
