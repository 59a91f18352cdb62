package causes

import (
	"slices"

	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/patch"
)

// Reason is what happened to an object, as Kopf names it. Create, Update,
// Delete and Resume select handlers; Noop, Free and Gone only tell the
// reactor that there is nothing to invoke.
type Reason string

const (
	Create Reason = "create"
	Update Reason = "update"
	Delete Reason = "delete"
	Resume Reason = "resume"
	// Noop: nothing essential changed (a status write, the operator's own
	// annotations, a resourceVersion bump).
	Noop Reason = "noop"
	// Free: the object is being deleted and no longer carries this
	// operator's finalizer, so the operator has nothing left to do with it.
	Free Reason = "free"
	// Gone: the object no longer exists.
	Gone Reason = "gone"
)

// Title is the reason's name in log lines, as Kopf words them: "Creation is
// in progress", "Updating is processed: 1 succeeded; 0 failed.",
// "Resuming is superseded by updating: ..." (lowercase it there). Kopf has no
// titles for Noop, Free and Gone, which never reach handlers; they get their
// capitalised names.
func (r Reason) Title() string {
	switch r {
	case Create:
		return "Creation"
	case Update:
		return "Updating"
	case Delete:
		return "Deletion"
	case Resume:
		return "Resuming"
	case Noop:
		return "Noop"
	case Free:
		return "Free"
	case Gone:
		return "Gone"
	}
	return string(r)
}

// ForHandlers reports whether handlers are registered for the reason
// (Kopf's HANDLER_REASONS); the others only inform the reactor's plan.
func (r Reason) ForHandlers() bool {
	switch r {
	case Create, Update, Delete, Resume:
		return true
	}
	return false
}

// Input is everything cause detection looks at.
type Input struct {
	// Gone: the watch said DELETED, the object no longer exists.
	Gone bool
	// Body is the object as last seen.
	Body map[string]any
	// Finalizer is this operator's finalizer name.
	Finalizer string
	// Old is the stored essence: nil when the object was never handled.
	// An empty non-nil map is a stored empty essence, not an absent one.
	Old map[string]any
	// New is the current essence.
	New map[string]any
	// Diff is diffbase.Compute(Old, New); the caller computes it once and
	// reuses it for handlers.
	Diff diffbase.Diff
	// Initial: the object came in this process's initial listing and has
	// not yet been fully handled once in this process.
	Initial bool
}

// Detect returns the reason of a handling cycle, checking in Kopf's order
// (detect_changing_cause):
//
//  1. the object is gone: Gone;
//  2. it is being deleted without this operator's finalizer: Free (Kopf
//     cannot block the deletion, so it does not pretend to handle it);
//  3. it is being deleted: Delete, whatever its essence says;
//  4. no essence was ever stored: Create, even in the initial listing;
//  5. nothing essential changed in an initially listed object: Resume;
//  6. nothing essential changed: Noop;
//  7. otherwise Update.
//
// Initial does not turn a change into Resume: for Update (and Delete)
// handler selection (handling.Select) mixes the resume handlers into the
// same cycle, as Kopf does (compat: handlers-resume). For Create it ignores Initial: creation
// never mixes with resuming.
func Detect(in Input) Reason {
	switch {
	case in.Gone:
		return Gone
	case IsDeleting(in.Body) && !HasFinalizer(in.Body, in.Finalizer):
		return Free
	case IsDeleting(in.Body):
		return Delete
	case in.Old == nil:
		return Create
	case len(in.Diff) == 0 && in.Initial:
		return Resume
	case len(in.Diff) == 0:
		return Noop
	default:
		return Update
	}
}

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
