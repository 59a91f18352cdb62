package diffbase

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/kopfgo/kopfgo/internal/conventions"
	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/patch"
)

// ErrCorrupt marks a stored diff-base that exists but cannot be read. The
// executor must not treat such an object as new (that would re-run creation
// handlers on an object already handled); it reports the error, naming the
// key, so that a human can repair or remove the value.
var ErrCorrupt = errors.New("corrupt diff-base")

// Storage keeps the last handled essence of an object on the object itself.
type Storage interface {
	// Build computes the essence of body: what counts as a change. Fields
	// in extraFields (watched by field handlers) are kept wherever they
	// are, status and metadata included. body is never modified.
	Build(body map[string]any, extraFields [][]string) map[string]any
	// Fetch returns the essence stored on body: nil, nil when there is
	// none (the object was never handled); an error wrapping ErrCorrupt
	// when there is one that cannot be parsed.
	Fetch(body map[string]any) (map[string]any, error)
	// Store writes essence into p, unless body already holds it.
	Store(body map[string]any, p *patch.Patch, essence map[string]any)
}

// Defaults of the annotations storage, as in Kopf.
const (
	defaultPrefix = conventions.KnownPrefix
	defaultKey    = "last-handled-configuration"
)

// Default returns the storage Kopf uses by default, so that objects handled
// by either framework read the same: the annotation
// kopf.zalando.org/last-handled-configuration.
func Default() Storage { return NewAnnotationsStorage() }

// AnnotationsStorage keeps the essence in an annotation as compact JSON plus
// a trailing newline, Kopf's default (compat: persistence-diffbase).
//
// The zero value is usable: an empty Prefix means "kopf.zalando.org" and an
// empty Key "last-handled-configuration". V1 cannot default to Kopf's true
// in a zero value; it only matters for prefixes longer than 36 characters,
// where the whole key exceeds 63 characters and Kopf also writes the
// shortened V1 key for rollbacks. NewAnnotationsStorage sets it.
//
// The JSON is written with sorted keys where Python keeps insertion order,
// and with non-ASCII characters as UTF-8 where Python writes \u escapes:
// values written by Kopf and by kopfgo differ in bytes but parse equal, and
// both read each other's. Store compares parsed values, so a value written by
// Kopf is not rewritten just for its byte order.
type AnnotationsStorage struct {
	Prefix        string
	Key           string
	IgnoredFields [][]string
	V1            bool
}

// NewAnnotationsStorage returns the storage with all of Kopf's defaults.
func NewAnnotationsStorage() *AnnotationsStorage {
	return &AnnotationsStorage{Prefix: defaultPrefix, Key: defaultKey, V1: true}
}

func (s AnnotationsStorage) prefix() string {
	if s.Prefix == "" {
		return defaultPrefix
	}
	return s.Prefix
}

func (s AnnotationsStorage) conv() conventions.Keys {
	return conventions.Keys{Prefix: s.prefix(), V1: s.V1}
}

// keys are the annotation keys of this storage on body: V2 first, then V1.
func (s AnnotationsStorage) keys(body map[string]any) []string {
	key := s.Key
	if key == "" {
		key = defaultKey
	}
	return s.conv().Make(conventions.Mark(key, body))
}

// Build computes the essence and removes this storage's own keys from it,
// for the case where they are not already dropped as a managed prefix (a
// custom prefix before its kopf-managed marker is written).
func (s AnnotationsStorage) Build(body map[string]any, extraFields [][]string) map[string]any {
	essence := buildEssence(body, extraFields, s.IgnoredFields)
	if ann := dicts.Map(essence, "metadata", "annotations"); len(ann) > 0 && s.mayHoldOwnKeys(ann) {
		for _, k := range s.keys(body) {
			delete(ann, k)
		}
	}
	removeEmptyStanzas(essence)
	return essence
}

// mayHoldOwnKeys avoids forming the keys (string building and hashing) on
// every event: own keys always start with the prefix.
func (s AnnotationsStorage) mayHoldOwnKeys(ann map[string]any) bool {
	prefix := s.prefix()
	for k := range ann {
		if len(k) > len(prefix) && k[len(prefix)] == '/' && strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// Fetch reads the V2 key, then the V1 key. A JSON null counts as absent, as
// in Kopf; anything else that is not a JSON object is corrupt.
func (s AnnotationsStorage) Fetch(body map[string]any) (map[string]any, error) {
	ann := dicts.Map(body, "metadata", "annotations")
	if len(ann) == 0 {
		return nil, nil
	}
	for _, k := range s.keys(body) {
		v, ok := ann[k]
		if !ok || v == nil {
			continue
		}
		essence, err := decodeEssence(v)
		if err != nil {
			return nil, fmt.Errorf("%w: annotation %q: %v", ErrCorrupt, k, err)
		}
		if essence != nil {
			return essence, nil
		}
	}
	return nil, nil
}

// Store writes the essence under every key whose value differs, and the
// kopf-managed marker for prefixes that need one, so that other Kopf-style
// operators ignore this state (compat: persistence-marker).
func (s AnnotationsStorage) Store(body map[string]any, p *patch.Patch, essence map[string]any) {
	encoded := mustEncode(essence)
	value := string(encoded)
	ann := dicts.Map(body, "metadata", "annotations")
	for _, k := range s.keys(body) {
		if !p.Has("metadata", "annotations", k) && holds(ann[k], encoded, essence) {
			continue
		}
		p.SetAnnotation(k, value)
	}
	if marker := s.conv().Marker(); marker != "" {
		if _, ok := ann[marker]; !ok && !p.Has("metadata", "annotations", marker) {
			p.SetAnnotation(marker, "yes")
		}
	}
}

// StatusStorage keeps the essence in a status field, as a JSON string so that
// merge patches replace it whole instead of merging old and new keys (compat:
// persistence-diffbase-storages). Unlike the annotation, the string has no
// trailing newline, as in Kopf.
//
// The zero value is usable: Name defaults to "kopf" and Field to
// "status.{name}.last-handled-configuration", where {name} is replaced by
// Name. Beware that a CRD without x-kubernetes-preserve-unknown-fields prunes
// the field silently (compat: persistence-pruning).
type StatusStorage struct {
	Name          string
	Field         string
	IgnoredFields [][]string
}

// defaultStatusField is the status storage's field, {name} standing for its
// Name.
const defaultStatusField = "status.{name}.last-handled-configuration"

func (s StatusStorage) path() []string {
	name := s.Name
	if name == "" {
		name = "kopf"
	}
	field := s.Field
	if field == "" {
		field = defaultStatusField
	}
	return strings.Split(strings.ReplaceAll(field, "{name}", name), ".")
}

// Build computes the essence without the storage's own field, which a field
// handler watching all of status would otherwise bring in.
func (s StatusStorage) Build(body map[string]any, extraFields [][]string) map[string]any {
	essence := buildEssence(body, extraFields, s.IgnoredFields)
	removeField(essence, s.path())
	return essence
}

// Fetch reads and parses the field. A value that is not a string is
// corrupt: a JSON object there was not written by Kopf or kopfgo.
func (s StatusStorage) Fetch(body map[string]any) (map[string]any, error) {
	path := s.path()
	v, ok := dicts.Get(body, path)
	if !ok || v == nil {
		return nil, nil
	}
	essence, err := decodeEssence(v)
	if err != nil {
		return nil, fmt.Errorf("%w: field %s: %v", ErrCorrupt, strings.Join(path, "."), err)
	}
	return essence, nil
}

// Store writes the essence into the field, unless it already holds it.
func (s StatusStorage) Store(body map[string]any, p *patch.Patch, essence map[string]any) {
	encoded := bytes.TrimSuffix(mustEncode(essence), []byte("\n"))
	path := s.path()
	if !p.Has(path...) {
		if v, _ := dicts.Get(body, path); holds(v, encoded, essence) {
			return
		}
	}
	p.Set(path, string(encoded))
}

// MultiStorage moves objects from one storage to another (compat:
// persistence-diffbase-storages): it writes to every storage and reads from the
// first that has an essence, so that objects handled under the old storage are
// not taken for new ones.
type MultiStorage struct {
	Storages []Storage
}

// Build computes the essence and lets each storage remove its own fields,
// feeding each the previous one's result as the body, as Kopf does.
func (s MultiStorage) Build(body map[string]any, extraFields [][]string) map[string]any {
	essence := buildEssence(body, extraFields, nil)
	for _, st := range s.Storages {
		essence = st.Build(essence, extraFields)
	}
	return essence
}

// Fetch returns the first stored essence, in the order of Storages. A
// corrupt value stops the search, as in Kopf: falling through to an older
// storage could resurrect a long-outdated state.
func (s MultiStorage) Fetch(body map[string]any) (map[string]any, error) {
	for _, st := range s.Storages {
		essence, err := st.Fetch(body)
		if err != nil || essence != nil {
			return essence, err
		}
	}
	return nil, nil
}

// Store writes the essence to every storage.
func (s MultiStorage) Store(body map[string]any, p *patch.Patch, essence map[string]any) {
	for _, st := range s.Storages {
		st.Store(body, p, essence)
	}
}

// decodeEssence parses a stored value, allowing the surrounding whitespace
// that Kopf writes (the trailing newline) or tolerates. JSON null is nil.
func decodeEssence(v any) (map[string]any, error) {
	str, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("want a JSON string, found %T", v)
	}
	decoded, err := decodeValue([]byte(str))
	if err != nil {
		return nil, err
	}
	switch t := decoded.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return t, nil
	default:
		return nil, fmt.Errorf("want a JSON object, found %T", decoded)
	}
}

// holds reports whether a stored value already carries the essence: equal
// bytes, or (for values written by Kopf, in another key order) equal parsed
// values. Skipping such writes saves an API call and the watch event it
// would echo back.
func holds(stored any, encoded []byte, essence map[string]any) bool {
	str, ok := stored.(string)
	if !ok {
		return false
	}
	if str == string(encoded) {
		return true
	}
	old, err := decodeEssence(str)
	return err == nil && old != nil && dicts.Equal(old, essence)
}

// mustEncode fails only for values that no JSON body can contain (channels,
// functions, NaN), i.e. for a programming error in the caller.
func mustEncode(essence map[string]any) []byte {
	if essence == nil {
		essence = map[string]any{}
	}
	b, err := encodeValue(essence)
	if err != nil {
		panic(fmt.Sprintf("diffbase: the essence cannot be encoded as JSON: %v", err))
	}
	return b
}
