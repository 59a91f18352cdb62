package causes

import (
	"github.com/kopfgo/kopfgo/diffbase"
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
