package persistence

import (
	"strings"

	"github.com/kopfgo/kopfgo/internal/conventions"
	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/patch"
)

// Kopf's defaults for the annotations storage.
const (
	defaultPrefix   = conventions.KnownPrefix // "kopf.zalando.org"
	defaultTouchKey = "touch-dummy"
)

// AnnotationsStorage keeps each record as compact JSON in an annotation
// "<prefix>/<safe-handler-id>", as Kopf's AnnotationsProgressStorage does.
// Annotations work on every resource, including built-in ones whose status
// schema would prune unknown fields.
//
// The zero value is usable and means Kopf's defaults except for V1, which
// Kopf enables by default: use NewAnnotationsStorage for exact defaults.
type AnnotationsStorage struct {
	// Prefix of the keys; "" means "kopf.zalando.org". Operators sharing
	// objects need distinct prefixes. A prefix not starting with "kopf."
	// gets a "<prefix>/kopf-managed" marker so that other Kopf-style
	// operators ignore these annotations in their diff-bases.
	Prefix string
	// Verbose writes None fields as nulls instead of leaving them out.
	Verbose bool
	// TouchKey names the touch-dummy annotation; "" means "touch-dummy".
	TouchKey string
	// V1 also writes (and purges) the V1 keys, whose 63-character limit
	// applies to the whole key, wherever they differ from the V2 keys. Kopf
	// does this by default so that operators can roll back to versions that
	// read V1 keys only.
	V1 bool
}

// NewAnnotationsStorage returns the annotations storage with Kopf's defaults.
func NewAnnotationsStorage() *AnnotationsStorage {
	return &AnnotationsStorage{Prefix: defaultPrefix, TouchKey: defaultTouchKey, V1: true}
}

func (s *AnnotationsStorage) keys() conventions.Keys {
	prefix := s.Prefix
	if prefix == "" {
		prefix = defaultPrefix
	}
	return conventions.Keys{Prefix: prefix, V1: s.V1}
}

// Fetch tries the V2 key, then the V1 key. A "null" value counts as absent,
// as it does in Kopf (json.loads gives None).
func (s *AnnotationsStorage) Fetch(id string, body map[string]any) (*Record, error) {
	annotations := dicts.Map(body, "metadata", "annotations")
	if len(annotations) == 0 {
		return nil, nil
	}
	var corrupt error
	for _, key := range s.keys().Make(conventions.Mark(id, body)) {
		raw, ok := annotations[key]
		if !ok || raw == nil {
			continue
		}
		encoded, ok := raw.(string)
		if !ok {
			if corrupt == nil {
				corrupt = &CorruptError{Key: key, Err: fieldError("annotation", raw, "not a string")}
			}
			continue
		}
		r, err := decodeRecord(encoded)
		if err != nil {
			if corrupt == nil {
				corrupt = &CorruptError{Key: key, Err: err}
			}
			continue
		}
		if r != nil {
			return r, nil
		}
	}
	return nil, corrupt
}

func (s *AnnotationsStorage) Store(id string, r *Record, body map[string]any, p *patch.Patch) {
	k := s.keys()
	encoded := string(r.appendJSON(make([]byte, 0, 192), s.Verbose))
	annotations := p.Annotations()
	for _, key := range k.Make(conventions.Mark(id, body)) {
		annotations[key] = encoded
	}
	storeMarker(k, body, p)
}

func (s *AnnotationsStorage) Purge(id string, body map[string]any, p *patch.Patch) {
	for _, key := range s.keys().Make(conventions.Mark(id, body)) {
		purgeField(body, p, []string{"metadata", "annotations", key})
	}
}

func (s *AnnotationsStorage) Touch(body map[string]any, p *patch.Patch, value *string) {
	touchKey := s.TouchKey
	if touchKey == "" {
		touchKey = defaultTouchKey
	}
	k := s.keys()
	annotations := dicts.Map(body, "metadata", "annotations")
	for _, key := range k.Make(conventions.Mark(touchKey, body)) {
		if !touchNeeded(annotations[key], value) {
			continue
		}
		if value != nil {
			p.SetAnnotation(key, *value)
		} else {
			p.RemoveAnnotation(key)
		}
		storeMarker(k, body, p)
	}
}

// Clear removes every annotation under the prefix, not only the known
// records: at diff-base time the handler ids of past cycles are unknown, and
// Kopf removes the whole prefix (the touch-dummy and the marker included).
func (s *AnnotationsStorage) Clear(essence map[string]any) map[string]any {
	prefix := s.keys().Prefix + "/"
	essence = removeAnnotations(essence, func(key string) bool { return strings.HasPrefix(key, prefix) })
	return removeEmptyStanzas(essence)
}

// storeMarker brands the prefix as Kopf-managed (compat: persistence-marker),
// so that other Kopf-style operators drop this operator's annotations from
// their diff-bases instead of reacting to every record change ("ping-pong").
// Prefixes starting with "kopf." are recognised without a marker.
func storeMarker(k conventions.Keys, body map[string]any, p *patch.Patch) {
	marker := k.Marker()
	if marker == "" {
		return
	}
	if _, ok := dicts.Map(body, "metadata", "annotations")[marker]; ok {
		return
	}
	if p.Has("metadata", "annotations", marker) {
		return
	}
	p.SetAnnotation(marker, "yes")
}
