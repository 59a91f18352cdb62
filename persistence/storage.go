package persistence

import (
	"errors"

	"github.com/kopfgo/kopfgo/patch"
)

// Storage keeps handlers' progress records, as Kopf's ProgressStorage does.
// Records are per handler, atomic and independent of each other, so that
// several operators can share one field without merging each other's state.
//
// Implementations read only from body and write only into p: the framework
// sends the patch, so that a whole cycle costs one API call. They must be
// safe for concurrent use, as one storage serves all objects.
type Storage interface {
	// Fetch returns the record for the handler id, nil when absent. A value
	// that is present but does not parse gives an error wrapping ErrCorrupt
	// and naming the key; the caller warns and proceeds as if there were no
	// record.
	Fetch(id string, body map[string]any) (*Record, error)
	// Store writes the record for the handler id into the patch.
	Store(id string, r *Record, body map[string]any, p *patch.Patch)
	// Purge removes the handler's record: a null for what exists in body,
	// and a retraction of what only the patch holds, so that purging records
	// that were never stored costs nothing.
	Purge(id string, body map[string]any, p *patch.Patch)
	// Touch sets (value != nil) or removes (nil) the touch-dummy, whose only
	// purpose is to produce a watch event when a delayed handler is due.
	// Nothing is written when body already holds that value (or, for nil,
	// holds nothing).
	Touch(body map[string]any, p *patch.Patch, value *string)
	// Clear returns the diff-base essence without this storage's own
	// fields, so that progress records never count as changes of the object.
	// It does not modify essence; the result may share unmodified parts
	// with it.
	Clear(essence map[string]any) map[string]any
}

// MultiStorage combines storages as Kopf's MultiProgressStorage does: writes,
// purges and touches go to all of them, and a fetch returns the record of
// the first one that has it, so the first storage takes precedence.
type MultiStorage struct {
	Storages []Storage
}

// Fetch returns the first record found. A corrupt value in one storage does
// not hide a good record in another (the good record is returned without an
// error); corruption is reported only when no storage has a usable record.
func (m *MultiStorage) Fetch(id string, body map[string]any) (*Record, error) {
	return fetchFirst(id, body, m.Storages...)
}

func fetchFirst(id string, body map[string]any, storages ...Storage) (*Record, error) {
	var errs []error
	for _, s := range storages {
		r, err := s.Fetch(id, body)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if r != nil {
			return r, nil
		}
	}
	return nil, errors.Join(errs...)
}

func (m *MultiStorage) Store(id string, r *Record, body map[string]any, p *patch.Patch) {
	for _, s := range m.Storages {
		s.Store(id, r, body, p)
	}
}

func (m *MultiStorage) Purge(id string, body map[string]any, p *patch.Patch) {
	for _, s := range m.Storages {
		s.Purge(id, body, p)
	}
}

func (m *MultiStorage) Touch(body map[string]any, p *patch.Patch, value *string) {
	for _, s := range m.Storages {
		s.Touch(body, p, value)
	}
}

func (m *MultiStorage) Clear(essence map[string]any) map[string]any {
	for _, s := range m.Storages {
		essence = s.Clear(essence)
	}
	return essence
}

// SmartStorage is Kopf's default progress storage (SmartProgressStorage):
// records are read from and written to annotations; the status storage is
// read as a fallback and purged, but never written or touched. That makes
// objects handled by Kopf's old status-only storage (v0.27 to 1.44) continue
// their cycles, while new records cost no status patch.
type SmartStorage struct {
	Annotations AnnotationsStorage
	Status      StatusStorage
}

// Default returns the storage Kopf uses when none is configured: a
// *SmartStorage with Kopf's defaults.
func Default() Storage {
	return &SmartStorage{Annotations: *NewAnnotationsStorage(), Status: StatusStorage{}}
}

// Fetch prefers the annotations, as Kopf does.
func (s *SmartStorage) Fetch(id string, body map[string]any) (*Record, error) {
	return fetchFirst(id, body, &s.Annotations, &s.Status)
}

// Store writes annotations only: Kopf stopped writing the status record
// because it doubled the PATCH requests of every cycle.
func (s *SmartStorage) Store(id string, r *Record, body map[string]any, p *patch.Patch) {
	s.Annotations.Store(id, r, body, p)
}

// Purge purges both, so that legacy status records disappear once their
// cycle ends.
func (s *SmartStorage) Purge(id string, body map[string]any, p *patch.Patch) {
	s.Annotations.Purge(id, body, p)
	s.Status.Purge(id, body, p)
}

// Touch touches annotations only, as Kopf's read-only status storage
// ignores touches.
func (s *SmartStorage) Touch(body map[string]any, p *patch.Patch, value *string) {
	s.Annotations.Touch(body, p, value)
}

func (s *SmartStorage) Clear(essence map[string]any) map[string]any {
	return s.Status.Clear(s.Annotations.Clear(essence))
}
