package dicts

import (
	"fmt"
	"strings"
)

// ParsePath splits a dotted field path ("spec.field") into its keys. It
// rejects empty paths and empty segments, because a handler registered on
// such a path could never be matched and would silently never fire.
func ParsePath(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty field path: name a field such as \"spec.field\"")
	}
	keys := strings.Split(s, ".")
	for _, k := range keys {
		if k == "" {
			return nil, fmt.Errorf("field path %q has an empty segment: remove the extra dot", s)
		}
	}
	return keys, nil
}

// Get returns the value at path in obj and whether it exists. A path that
// runs through a non-map value does not exist.
func Get(obj any, path []string) (any, bool) {
	cur := obj
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = m[k]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// Map returns the map at path, or nil when it is absent or not a map.
func Map(obj any, path ...string) map[string]any {
	v, _ := Get(obj, path)
	m, _ := v.(map[string]any)
	return m
}

// String returns the string at path, or "" when it is absent or not a string.
func String(obj any, path ...string) string {
	v, _ := Get(obj, path)
	s, _ := v.(string)
	return s
}

// Set stores value at path in obj, creating intermediate maps as needed and
// replacing non-map intermediates.
func Set(obj map[string]any, path []string, value any) {
	if len(path) == 0 {
		return
	}
	cur := obj
	for _, k := range path[:len(path)-1] {
		next, ok := cur[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[k] = next
		}
		cur = next
	}
	cur[path[len(path)-1]] = value
}

// Remove deletes the value at path, if present, and prunes nothing else.
func Remove(obj map[string]any, path []string) {
	if len(path) == 0 {
		return
	}
	parent := Map(obj, path[:len(path)-1]...)
	if parent != nil {
		delete(parent, path[len(path)-1])
	}
}

// DeepCopy copies a JSON-like tree: maps, slices and scalars. Scalars are
// shared, which is safe because JSON scalars are immutable in Go.
func DeepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return DeepCopyMap(t)
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = DeepCopy(x)
		}
		return out
	default:
		return v
	}
}

// DeepCopyMap is DeepCopy for the common case of a map root.
func DeepCopyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		out[k] = DeepCopy(x)
	}
	return out
}

// Falsy is Python's "not value" for JSON-like values, which Kopf uses to
// drop empty stanzas (metadata, labels, annotations, status) from an
// object's essence and from its storages' fields: nil, empty maps, lists
// and strings, false, and zero numbers of any Go numeric type.
func Falsy(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	case string:
		return t == ""
	case bool:
		return !t
	case int:
		return t == 0
	case int8:
		return t == 0
	case int16:
		return t == 0
	case int32:
		return t == 0
	case int64:
		return t == 0
	case uint:
		return t == 0
	case uint8:
		return t == 0
	case uint16:
		return t == 0
	case uint32:
		return t == 0
	case uint64:
		return t == 0
	case float32:
		return t == 0
	case float64:
		return t == 0
	}
	return false
}
