package persistence

import (
	"maps"

	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/patch"
)

// purgeField nulls a field that exists in the body; when only the patch has
// it (stored earlier in this same cycle), it retracts it from the patch
// instead, pruning the parents that become empty, so that purging costs no
// API traffic for what the server never saw. This is Kopf's purge logic.
func purgeField(body map[string]any, p *patch.Patch, path []string) {
	if _, ok := dicts.Get(body, path); ok {
		p.Set(path, nil)
		return
	}
	if p.Has(path...) {
		removeAndPrune(p.Map(), path)
	}
}

// removeAndPrune deletes the field in place and every parent left empty, as
// Kopf's dicts.remove does for patches.
func removeAndPrune(m map[string]any, path []string) {
	if len(path) == 1 {
		delete(m, path[0])
		return
	}
	child, ok := m[path[0]].(map[string]any)
	if !ok {
		return
	}
	removeAndPrune(child, path[1:])
	if len(child) == 0 {
		delete(m, path[0])
	}
}

// touchNeeded compares as Kopf does (body_value != value, absent being
// None), so that a touch which changes nothing adds nothing to the patch.
func touchNeeded(current any, value *string) bool {
	if value == nil {
		return current != nil
	}
	s, ok := current.(string)
	return !ok || s != *value
}

// removeAnnotations returns the essence without the annotations for which
// drop is true, copying only the maps on the way to the change.
func removeAnnotations(essence map[string]any, drop func(string) bool) map[string]any {
	meta, ok := essence["metadata"].(map[string]any)
	if !ok {
		return essence
	}
	annotations, ok := meta["annotations"].(map[string]any)
	if !ok {
		return essence
	}
	var kept map[string]any
	for key := range annotations {
		if drop(key) {
			kept = make(map[string]any, len(annotations))
			break
		}
	}
	if kept == nil {
		return essence
	}
	for key, v := range annotations {
		if !drop(key) {
			kept[key] = v
		}
	}
	meta = maps.Clone(meta)
	meta["annotations"] = kept
	essence = maps.Clone(essence)
	essence["metadata"] = meta
	return essence
}

// removePath returns the essence without the field at path and without the
// parents left empty (Kopf's dicts.remove, which also drops a parent that
// was empty already), copying only the maps on the way to the change.
func removePath(m map[string]any, path []string) (map[string]any, bool) {
	v, ok := m[path[0]]
	if !ok {
		return m, false
	}
	if len(path) == 1 {
		m = maps.Clone(m)
		delete(m, path[0])
		return m, true
	}
	child, ok := v.(map[string]any)
	if !ok {
		return m, false
	}
	newChild, changed := removePath(child, path[1:])
	if len(newChild) == 0 {
		m = maps.Clone(m)
		delete(m, path[0])
		return m, true
	}
	if !changed {
		return m, false
	}
	m = maps.Clone(m)
	m[path[0]] = newChild
	return m, true
}

// removeEmptyStanzas drops the stanzas that the storages' removals may leave
// empty, exactly those Kopf drops (StorageStanzaCleaner): metadata's
// annotations and labels, then metadata, then status. "Empty" is Python's
// falsiness, as in Kopf: an empty map, but also null, "", 0, false.
func removeEmptyStanzas(essence map[string]any) map[string]any {
	if meta, ok := essence["metadata"].(map[string]any); ok {
		copied := false
		for _, key := range [...]string{"annotations", "labels"} {
			if v, ok := meta[key]; ok && dicts.Falsy(v) {
				if !copied {
					meta, copied = maps.Clone(meta), true
				}
				delete(meta, key)
			}
		}
		if copied {
			essence = maps.Clone(essence)
			essence["metadata"] = meta
		}
	}
	for _, key := range [...]string{"metadata", "status"} {
		if v, ok := essence[key]; ok && dicts.Falsy(v) {
			essence = maps.Clone(essence)
			delete(essence, key)
		}
	}
	return essence
}
