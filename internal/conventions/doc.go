// Package conventions forms the annotation keys that kopfgo's storages write,
// exactly as Kopf forms them, so that objects handled by a Kopf operator and by
// a kopfgo operator carry the same keys (compat: persistence-keys,
// persistence-marker).
//
// It also recognises the keys of other Kopf-style operators, so that their
// state never counts as an essential change of an object (the "ping-pong"
// between two operators that Kopf's markers prevent).
//
// And it writes and reads timestamps as Kopf does (FormatTime, ParseTime),
// for the progress records and the touch-dummy, which both frameworks must
// read back.
package conventions
