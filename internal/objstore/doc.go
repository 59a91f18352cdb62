// Package objstore is the one place the engine keeps what it knows about an
// object between passes, on the object itself: the last-handled essence
// (the diff-base, package diffbase) and the handlers' progress records
// (package persistence), both in Kopf's formats and through the storages
// the user chose (Settings.Persistence.DiffBaseStorage and
// ProgressStorage).
//
// It exists so that the reactor and internal/handling speak to one
// interface, Store, and never to the two storages, the essence or the
// diff directly: which storage holds what, that progress records never
// count as changes of the object, and how the touch-dummy is stamped are
// decided here once. A store reads only from the object's body and writes
// only into the pass's patch, as the storages do: it does no I/O.
//
// It is internal, and apart from persistence and diffbase, because those
// are public packages users implement custom storages against, and
// because it reads the run's settings (internal/config), which import
// them. The types its methods speak in, Record and Diff, are aliases of
// theirs, so a custom storage's records and the handlers' diffs are the
// same values throughout.
package objstore
