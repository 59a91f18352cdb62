package handling

import (
	"time"

	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/conventions"
	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/patch"
	"github.com/kopfgo/kopfgo/persistence"
)

// The store is the one place the engine keeps what it knows about an
// object between passes, on the object itself: the last-handled essence
// (the diff-base, package diffbase) and the handlers' progress records
// (package persistence), both in Kopf's formats and through the storages
// the user chose (Settings.Persistence.DiffBaseStorage and
// ProgressStorage).
//
// It exists so that the reactor and the rest of this package speak to one
// interface, Store, and never to the two storages, the essence or the diff
// directly: which storage holds what, that progress records never count as
// changes of the object, and how the touch-dummy is stamped are decided
// here once (this is the only file of the engine that imports persistence
// and diffbase: TestObjectStoreSeam). A store reads only from the object's
// body and writes only into the pass's patch, as the storages do: it does
// no I/O.
//
// It is apart from persistence and diffbase, because those are public
// packages users implement custom storages against, and because it reads
// the run's settings (internal/config), which import them. The types its
// methods speak in, Record and Diff, are aliases of theirs, so a custom
// storage's records and the handlers' diffs are the same values
// throughout.

// Record is one handler's progress on an object, in Kopf's format.
type Record = persistence.Record

// Diff is what changed between two essences, as update and field handlers
// see it.
type Diff = diffbase.Diff

// Progress is the part of a Store that a handling cycle reads and writes:
// one record per handler. An activity's cycle keeps its records in memory
// instead, with a Progress of its own.
type Progress interface {
	// Fetch returns the handler's record, nil when there is none; a record
	// that cannot be read gives an error naming it, and the caller warns
	// and starts the handler afresh.
	Fetch(id string, body map[string]any) (*Record, error)
	// Store writes the handler's record into p.
	Store(id string, r *Record, body map[string]any, p *patch.Patch)
	// Purge removes the handler's record: from the object, with p, and
	// from p itself.
	Purge(id string, body map[string]any, p *patch.Patch)
}

// Store is what the operator keeps on one object: its progress records and
// its diff-base. Every method reads only from body and writes only into p.
type Store interface {
	Progress
	// Essence is the object's essence, what counts as a change of it, with
	// the fields outside the default essence that handlers watch
	// (extraFields); the progress records are never part of it.
	Essence(body map[string]any, extraFields [][]string) map[string]any
	// LastHandled is the essence stored when the object was last handled:
	// nil when it never was, or when the stored one cannot be read (err
	// says why, and the object counts as never handled).
	LastHandled(body map[string]any) (map[string]any, error)
	// Handled stores essence as the object's last handled one.
	Handled(body map[string]any, p *patch.Patch, essence map[string]any)
	// Touch stamps the touch-dummy with at: the patch changes the object,
	// and the watch delivers it anew to wake its delayed handlers.
	Touch(body map[string]any, p *patch.Patch, at time.Time)
	// Untouch removes the touch-dummy, which a real patch makes
	// unnecessary.
	Untouch(body map[string]any, p *patch.Patch)
	// ProgressOnly reports whether p holds nothing but progress records.
	ProgressOnly(p *patch.Patch) bool
}

// StoreOf is the Store of the run's settings. It reads the storages from them on
// every call, so that they are the settings' as they stand.
func StoreOf(p *config.Persistence) Store { return settings{p} }

type settings struct{ p *config.Persistence }

func (s settings) Fetch(id string, body map[string]any) (*Record, error) {
	return s.p.ProgressStorage.Fetch(id, body)
}

func (s settings) Store(id string, r *Record, body map[string]any, p *patch.Patch) {
	s.p.ProgressStorage.Store(id, r, body, p)
}

func (s settings) Purge(id string, body map[string]any, p *patch.Patch) {
	s.p.ProgressStorage.Purge(id, body, p)
}

func (s settings) Essence(body map[string]any, extraFields [][]string) map[string]any {
	return s.p.ProgressStorage.Clear(s.p.DiffBaseStorage.Build(body, extraFields))
}

func (s settings) LastHandled(body map[string]any) (map[string]any, error) {
	old, err := s.p.DiffBaseStorage.Fetch(body)
	if err != nil || old == nil {
		return nil, err
	}
	return s.p.ProgressStorage.Clear(old), nil
}

func (s settings) Handled(body map[string]any, p *patch.Patch, essence map[string]any) {
	s.p.DiffBaseStorage.Store(body, p, essence)
}

func (s settings) Touch(body map[string]any, p *patch.Patch, at time.Time) {
	stamp := conventions.FormatTime(at)
	s.p.ProgressStorage.Touch(body, p, &stamp)
}

func (s settings) Untouch(body map[string]any, p *patch.Patch) {
	s.p.ProgressStorage.Touch(body, p, nil)
}

func (s settings) ProgressOnly(p *patch.Patch) bool {
	return len(s.p.ProgressStorage.Clear(p.Map())) == 0
}

// DiffOf is the diff between two essences (or two values of a field), as
// the handlers are given it.
func DiffOf(old, new any) Diff { return diffbase.Compute(old, new) }

// equal reports whether two values are the same as the diff-base compares
// them: deeply, numbers by value whatever their Go type, a nil map or list
// equal to nil.
func equal(a, b any) bool { return dicts.Equal(a, b) }
