package diffbase

import (
	"strings"

	"github.com/kopfgo/kopfgo/internal/conventions"
	"github.com/kopfgo/kopfgo/internal/dicts"
)

// lastAppliedAnnotation is kubectl's copy of the applied manifest: it changes
// together with the fields it describes, so it would only double every diff.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// buildEssence is Kopf's DiffBaseStorage.build, shared by all storages: the
// body without apiVersion, kind, metadata and status, with labels and the
// annotations that are not operators' own state put back, then the watched
// extra fields, then the ignored fields taken away. The body is never
// modified: everything in the essence is a copy.
func buildEssence(body map[string]any, extraFields, ignoredFields [][]string) map[string]any {
	essence := make(map[string]any, len(body))
	for k, v := range body {
		switch k {
		case "apiVersion", "kind", "metadata", "status":
			// apiVersion and kind never change for one object; metadata and
			// status are mostly system state (managedFields alone is often
			// the largest part of a body), so they are not even copied.
		default:
			essence[k] = dicts.DeepCopy(v)
		}
	}

	if meta, ok := body["metadata"].(map[string]any); ok {
		var m map[string]any
		if labels, ok := meta["labels"]; ok {
			m = map[string]any{"labels": filterLabels(labels)}
		}
		if ann, ok := meta["annotations"]; ok {
			if m == nil {
				m = map[string]any{}
			}
			if am, ok := ann.(map[string]any); ok {
				m["annotations"] = filterAnnotations(am, nil)
			} else {
				m["annotations"] = dicts.DeepCopy(ann)
			}
		}
		if m != nil {
			essence["metadata"] = m
		}
	}

	if len(extraFields) > 0 {
		addExtraFields(essence, body, extraFields)
	}

	removeEmptyStanzas(essence)

	for _, path := range ignoredFields {
		removeField(essence, path)
	}
	return essence
}

// addExtraFields copies the fields that field handlers watch (compat:
// handlers-field-essence) from the body, wherever they are, status and metadata
// included.
//
// Kopf copies them verbatim, so a field handler on metadata.annotations (or
// on metadata) brings every operator's state annotations back into the
// essence, and each progress write then looks like an essential change.
// kopfgo filters such a whole-annotations copy as it filters the default one,
// keeping only annotations that an extra field names explicitly: the one
// deliberate difference from Kopf's essence.
func addExtraFields(essence, body map[string]any, extraFields [][]string) {
	refilter := false
	for _, path := range extraFields {
		if len(path) == 0 {
			continue // the root is already the essence; Kopf rejects it
		}
		v, ok := dicts.Get(body, path)
		if !ok {
			continue
		}
		dicts.Set(essence, path, dicts.DeepCopy(v))
		if len(path) <= 2 && path[0] == "metadata" && (len(path) == 1 || path[1] == "annotations") {
			refilter = true
		}
	}
	if !refilter {
		return
	}
	meta, _ := essence["metadata"].(map[string]any)
	ann, ok := meta["annotations"].(map[string]any)
	if !ok {
		return
	}
	meta["annotations"] = filterAnnotations(ann, func(key string) bool {
		for _, path := range extraFields {
			if len(path) == 3 && path[0] == "metadata" && path[1] == "annotations" && path[2] == key {
				return true
			}
		}
		return false
	})
}

// filterAnnotations copies the annotations that belong in an essence: not
// kubectl's last-applied copy, and nothing under the prefix of a Kopf-style
// operator (Kopf's own, its subdomains, and any prefix carrying a kopf-managed
// marker), so that two operators on one object never take each other's state
// for a change (compat: persistence-marker). keep, when given, rescues keys
// that a field handler watches explicitly.
func filterAnnotations(ann map[string]any, keep func(string) bool) map[string]any {
	managed := conventions.ManagedPrefixes(ann)
	out := make(map[string]any, len(ann))
	for k, v := range ann {
		if keep == nil || !keep(k) {
			if k == lastAppliedAnnotation {
				continue
			}
			if prefix, _, ok := strings.Cut(k, "/"); ok && managed[prefix] {
				continue
			}
		}
		out[k] = dicts.DeepCopy(v)
	}
	return out
}

// filterLabels copies the labels that belong in an essence: all but the
// shard labels of kopfgo's sharding (conventions.ShardLabel), which a
// coordinating replica puts on objects handled long before, and which
// must not look like a change of them (compat: replicas-sharding).
func filterLabels(labels any) any {
	lm, ok := labels.(map[string]any)
	if !ok {
		return dicts.DeepCopy(labels)
	}
	out := make(map[string]any, len(lm))
	for k, v := range lm {
		if !conventions.IsShardLabel(k) {
			out[k] = dicts.DeepCopy(v)
		}
	}
	return out
}

// removeEmptyStanzas drops the stanzas that Kopf drops when empty, with
// Python's idea of empty (an empty map, "", null...), so that an object
// with "labels: {}" and one without labels have the same essence.
func removeEmptyStanzas(essence map[string]any) {
	if meta, ok := essence["metadata"].(map[string]any); ok {
		if v, ok := meta["annotations"]; ok && dicts.Falsy(v) {
			delete(meta, "annotations")
		}
		if v, ok := meta["labels"]; ok && dicts.Falsy(v) {
			delete(meta, "labels")
		}
	}
	if v, ok := essence["metadata"]; ok && dicts.Falsy(v) {
		delete(essence, "metadata")
	}
	if v, ok := essence["status"]; ok && dicts.Falsy(v) {
		delete(essence, "status")
	}
}

// removeField deletes the field at path and then every parent map on the way
// that is left empty, as Kopf's dicts.remove does; a path through a non-map
// value is ignored. Kopf prunes a parent that is empty after the attempt
// even when the field was not there; so does kopfgo, so that both compute the
// same essence.
func removeField(m map[string]any, path []string) {
	switch len(path) {
	case 0:
		return
	case 1:
		delete(m, path[0])
		return
	}
	child, ok := m[path[0]].(map[string]any)
	if !ok {
		return
	}
	removeField(child, path[1:])
	if len(child) == 0 {
		delete(m, path[0])
	}
}
