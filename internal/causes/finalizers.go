package causes

import (
	"slices"

	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/patch"
)

// IsDeleting reports whether the object is marked for deletion. A null
// deletionTimestamp does not count, as in Kopf.
func IsDeleting(body map[string]any) bool {
	v, ok := dicts.Get(body, []string{"metadata", "deletionTimestamp"})
	return ok && v != nil
}

// HasFinalizer reports whether the object carries the finalizer name.
func HasFinalizer(body map[string]any, name string) bool {
	// Called on every event: look without copying the list.
	switch t := dicts.Map(body, "metadata")["finalizers"].(type) {
	case []any:
		for _, v := range t {
			if s, ok := v.(string); ok && s == name {
				return true
			}
		}
	case []string:
		return slices.Contains(t, name)
	}
	return false
}

// AddFinalizer puts the finalizer name into p, unless the object (or p, when
// an earlier call of this cycle already wrote the list) carries it already.
//
// A merge patch replaces lists whole, so p holds the entire new list: the
// object's finalizers plus this one. A finalizer that another controller
// adds or removes between the read of body and the patch is silently undone.
// The reactor prevents that by sending the patch with the body's
// metadata.resourceVersion: the API server rejects a stale patch with 409
// Conflict, and the reactor builds the list again from a fresh read. This
// package only builds the list.
func AddFinalizer(body map[string]any, p *patch.Patch, name string) {
	list := currentFinalizers(body, p)
	if slices.Contains(list, name) {
		return
	}
	p.Meta()["finalizers"] = toAny(append(list, name))
}

// RemoveFinalizer takes the finalizer name out of the list in p, with the
// same caveat as AddFinalizer: the whole list is written.
func RemoveFinalizer(body map[string]any, p *patch.Patch, name string) {
	list := currentFinalizers(body, p)
	if !slices.Contains(list, name) {
		return
	}
	list = slices.DeleteFunc(list, func(s string) bool { return s == name })
	p.Meta()["finalizers"] = toAny(list) // [] and not null: a list the API keeps as empty
}

// currentFinalizers is the list as it will be after p: p's own list when an
// earlier call already wrote one, else the body's. It is a fresh slice.
func currentFinalizers(body map[string]any, p *patch.Patch) []string {
	if p.Has("metadata", "finalizers") {
		return finalizers(dicts.Map(p.Map(), "metadata"))
	}
	return finalizers(dicts.Map(body, "metadata"))
}

// finalizers reads metadata.finalizers as decoded JSON ([]any) or as a
// typed list ([]string), ignoring anything that is not a string.
func finalizers(meta map[string]any) []string {
	switch t := meta["finalizers"].(type) {
	case []any:
		out := make([]string, 0, len(t)+1)
		for _, v := range t {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
		return out
	case []string:
		return append(make([]string, 0, len(t)+1), t...)
	}
	return nil
}

func toAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}
