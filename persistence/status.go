package persistence

import (
	"slices"
	"strings"

	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/patch"
)

// Kopf's defaults for the status storage. "{name}" in a field is replaced by
// the storage's Name, as in Kopf.
const (
	defaultStatusName       = "kopf"
	defaultStatusField      = "status.{name}.progress"
	defaultStatusTouchField = "status.{name}.dummy"
)

var (
	defaultStatusPath      = []string{"status", "kopf", "progress"}
	defaultStatusTouchPath = []string{"status", "kopf", "dummy"}
)

// StatusStorage keeps records as plain nested objects under a status field,
// keyed by the verbatim handler id (e.g. "status.kopf.progress.parent/sub1"),
// as Kopf's StatusProgressStorage does. Custom resources need a schema that
// preserves unknown fields there; built-in resources prune them, which is why
// Kopf's default moved to annotations.
//
// The zero value is usable and means Kopf's defaults.
type StatusStorage struct {
	// Name replaces "{name}" in the fields; "" means "kopf".
	Name string
	// Field is the dotted path of the records' container; "" means
	// "status.{name}.progress". Keys containing dots cannot be addressed.
	Field string
	// TouchField is the dotted path of the touch-dummy; "" means
	// "status.{name}.dummy".
	TouchField string
}

// fieldPath returns the records' container path; callers must not modify it,
// as the default is shared.
func (s *StatusStorage) fieldPath() []string {
	return s.resolve(s.Field, defaultStatusField, defaultStatusPath)
}

func (s *StatusStorage) touchPath() []string {
	return s.resolve(s.TouchField, defaultStatusTouchField, defaultStatusTouchPath)
}

func (s *StatusStorage) resolve(field, defaultField string, defaultPath []string) []string {
	name := s.Name
	if name == "" {
		name = defaultStatusName
	}
	if field == "" {
		field = defaultField
	}
	if field == defaultField && name == defaultStatusName {
		return defaultPath
	}
	return strings.Split(strings.ReplaceAll(field, "{name}", name), ".")
}

func (s *StatusStorage) recordPath(id string) []string {
	return append(slices.Clip(s.fieldPath()), id)
}

// Fetch reads the record at "<field>.<id>". A container or record that is
// not an object is reported as corrupt rather than ignored, so the user
// learns about it.
func (s *StatusStorage) Fetch(id string, body map[string]any) (*Record, error) {
	path := s.fieldPath()
	raw, ok := dicts.Get(body, path)
	if !ok || raw == nil {
		return nil, nil
	}
	container, ok := raw.(map[string]any)
	if !ok {
		return nil, &CorruptError{Key: strings.Join(path, "."), Err: fieldError("progress", raw, "not an object")}
	}
	switch v := container[id].(type) {
	case nil:
		return nil, nil
	case map[string]any:
		r, err := recordFromMap(v)
		if err != nil {
			return nil, &CorruptError{Key: strings.Join(path, ".") + "." + id, Err: err}
		}
		return r, nil
	default:
		return nil, &CorruptError{Key: strings.Join(path, ".") + "." + id, Err: fieldError("record", v, "not an object")}
	}
}

func (s *StatusStorage) Store(id string, r *Record, body map[string]any, p *patch.Patch) {
	p.Set(s.recordPath(id), r.statusMap())
}

func (s *StatusStorage) Purge(id string, body map[string]any, p *patch.Patch) {
	purgeField(body, p, s.recordPath(id))
}

func (s *StatusStorage) Touch(body map[string]any, p *patch.Patch, value *string) {
	path := s.touchPath()
	current, _ := dicts.Get(body, path)
	if !touchNeeded(current, value) {
		return
	}
	if value != nil {
		p.Set(path, *value)
	} else {
		p.Set(path, nil)
	}
}

// Clear removes the records' container and the parents it leaves empty. The
// essence normally has no status at all; this matters only when handlers
// watch status fields and the essence keeps them.
func (s *StatusStorage) Clear(essence map[string]any) map[string]any {
	essence, _ = removePath(essence, s.fieldPath())
	return removeEmptyStanzas(essence)
}
