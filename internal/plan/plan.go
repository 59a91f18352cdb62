package plan

import (
	"time"

	"github.com/kopfgo/kopfgo/internal/causes"
)

// Facts are what a pass knows about an object when it plans.
type Facts struct {
	// Unwritten: an earlier pass's patch failed, and its outcome (the
	// handlers' progress and results, the diff-base) waits in memory to be
	// written; the handlers must not run again before it is.
	Unwritten bool
	// Stale: the body is older than the latest version the watch has
	// delivered; that version's pass is coming.
	Stale bool
	// Pending, when positive, is how long the consistency timeout still
	// waits for the operator's own latest patch to come back through the
	// watch: the body predates it.
	Pending time.Duration

	// Deleting: the object is marked for deletion.
	Deleting bool
	// HasFinalizer: the object carries the operator's finalizer.
	HasFinalizer bool

	// Changing: the resource has changing handlers (create, update, delete,
	// resume, field).
	Changing bool
	// DeleteHandled: the object's delete handlers finished in an earlier
	// pass, and only its daemons and timers kept the finalizer since.
	DeleteHandled bool

	// Reason is what happened to the object (causes.Detect); with InScope
	// and HandlersRequire it is gathered only when Detects says so.
	Reason causes.Reason
	// InScope: some changing handler's filters match the object (Kopf's
	// prematch). An object out of scope is handled in stealth mode: nothing
	// is stored on it and nothing is logged about it.
	InScope bool
	// HandlersRequire: a non-optional delete handler matches the object.
	HandlersRequire bool

	// DaemonsRequire: a daemon or timer that has not exited for good
	// matches the object, so that its deletion must wait for it.
	DaemonsRequire bool
	// DaemonsHolding: some daemons or timers still run on the object.
	DaemonsHolding bool
}

// Detects reports whether the pass needs the object's cause (Reason,
// InScope, HandlersRequire): the resource has changing handlers, and they
// are not done with a deletion already. The reactor gathers those facts only
// then: detection costs an essence and a diff, and may call filters.
func (f Facts) Detects() bool {
	return f.Changing && !(f.Deleting && f.DeleteHandled)
}

// Action is what a step does.
type Action int

const (
	// Nothing: the pass ends; the next one comes with news.
	Nothing Action = iota
	// Wait: the next pass comes after Step.Wait, or earlier with news.
	Wait
	// AddFinalizer: the object needs the finalizer and lacks it. Nothing
	// else happens in the pass: the patch comes back as news, and that
	// pass handles the object with the finalizer in place (as Kopf does).
	AddFinalizer
	// RemoveFinalizer: the object carries the finalizer but nothing needs
	// it any longer; nothing else happens in the pass.
	RemoveFinalizer
	// Release: the object is being deleted and the operator is done with
	// it: removing the finalizer lets the deletion go on.
	Release
	// Noop: nothing essential changed; the object counts as handled once.
	Noop
	// Free: the object is being deleted without the operator's finalizer
	// and changing handlers have it in scope: the operator is done with it
	// (Kopf's Free cause); nothing to do.
	Free
	// Handle: run the handling cycle for Step.Reason, then plan with After.
	Handle
	// Rewrite: send the patch an earlier pass failed to write; the next
	// pass comes with its news (or after a delay if it fails again).
	Rewrite

	// The steps that end a pass whose cycle has run (After). Each applies
	// the cycle's patch.

	// Apply: apply the cycle's patch; the next pass comes with news.
	Apply
	// Sleep: apply, then touch the object after Step.Wait to wake the
	// delayed handlers, unless news comes first.
	Sleep
	// Store: the cause is handled; store the essence as the new diff-base
	// and apply.
	Store
	// Hold: the delete handlers are done, but daemons or timers still run:
	// remember that the handlers are done (DeleteHandled), and apply. The
	// daemons' exit wakes the object, and that pass releases it.
	Hold
	// Discard: the operator is stopping and no handler ran: the patch is
	// dropped, and the next start handles the object anew.
	Discard
)

var actionNames = [...]string{"nothing", "wait", "add finalizer", "remove finalizer", "release", "noop", "free", "handle", "rewrite",
	"apply", "sleep", "store", "hold", "discard"}

func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "unknown"
}

// Step is the one thing a pass does.
type Step struct {
	Action Action
	// Wait is the delay of Wait and Sleep.
	Wait time.Duration
	// Reason is the cause to handle, for Handle.
	Reason causes.Reason
}

// Pass is the step a pass takes, checked in this order:
//
//  0. an outcome that an earlier pass failed to write is written first:
//     Rewrite (whatever the body, which only names the object then);
//  1. a stale body waits for the newer version's pass: Nothing; a body from
//     before the operator's own patch waits for it: Wait;
//  2. an object being deleted (see deletion);
//  3. the finalizer goes on when the object needs it and lacks it, and off
//     when it has it and needs it no longer;
//  4. an object without changing handlers, or out of their scope, is left
//     alone: Nothing (stealth mode);
//  5. nothing essential changed: Noop;
//  6. otherwise the cause is handled: Handle.
//
// The object needs the finalizer when a daemon or timer requires it, or a
// non-optional delete handler has it in scope.
func Pass(f Facts) Step {
	switch {
	case f.Unwritten:
		return Step{Action: Rewrite}
	case f.Stale:
		return Step{Action: Nothing}
	case f.Pending > 0:
		return Step{Action: Wait, Wait: f.Pending}
	case f.Deleting:
		return deletion(f)
	}
	detected := f.Detects()
	required := f.DaemonsRequire || detected && f.InScope && f.HandlersRequire
	switch {
	case required && !f.HasFinalizer:
		return Step{Action: AddFinalizer}
	case !required && f.HasFinalizer:
		return Step{Action: RemoveFinalizer}
	case !detected || !f.InScope:
		return Step{Action: Nothing}
	case f.Reason == causes.Noop:
		return Step{Action: Noop}
	case !f.Reason.ForHandlers():
		return Step{Action: Nothing} // Gone and Free never come here: the object exists and is not being deleted
	}
	return Step{Action: Handle, Reason: f.Reason}
}

// deletion is Pass for an object being deleted. No finalizer is added: the
// API server would refuse it. Without the operator's finalizer there is
// nothing left to do: Free for an object in the changing handlers' scope
// (Kopf's Free cause), Nothing otherwise. With it, the delete handlers that have
// the object in scope run (optional ones included), while its daemons and
// timers stop; once both are done, the object is released.
//
// Kopf drops a finalizer that nothing requires even during the deletion,
// skipping the delete handlers of that cycle. kopfgo does so only for an
// object out of every handler's scope; one in scope goes through its delete
// handlers first, and After releases it.
func deletion(f Facts) Step {
	detected := f.Detects()
	switch {
	case !f.HasFinalizer && detected && f.InScope:
		return Step{Action: Free}
	case !f.HasFinalizer:
		return Step{Action: Nothing}
	case detected && f.InScope:
		return Step{Action: Handle, Reason: causes.Delete}
	case f.DaemonsHolding:
		return Step{Action: Nothing} // their exit wakes the object
	case detected:
		return Step{Action: RemoveFinalizer} // out of scope: no handler requires it
	}
	return Step{Action: Release}
}

// Outcome is what a pass learns from its handling cycle.
type Outcome struct {
	// Done: every handler of the cause has finished.
	Done bool
	// Delay, when not Done, is how long until a handler is due; zero
	// means at once (the cycle's patch brings the next pass).
	Delay time.Duration
	// Ran: a handler was invoked.
	Ran bool
	// Stopping: the operator is stopping.
	Stopping bool
}

// After is the step that ends a pass whose cycle for f.Reason has run. A
// handled deletion releases the object unless its daemons or timers still
// hold it; any other handled cause stores the essence as the new diff-base.
// Handlers due later are woken by a touch once their delay passes.
func After(f Facts, o Outcome) Step {
	switch {
	case o.Stopping && !o.Ran:
		return Step{Action: Discard}
	case !o.Done && o.Delay > 0:
		return Step{Action: Sleep, Wait: o.Delay}
	case !o.Done:
		return Step{Action: Apply}
	case f.Reason != causes.Delete:
		return Step{Action: Store}
	case f.held():
		return Step{Action: Hold}
	case !f.HasFinalizer:
		return Step{Action: Apply}
	}
	return Step{Action: Release}
}

// held: a deletion with the finalizer whose daemons or timers still run on
// the object; once handled, it ends with Hold rather than the release.
func (f Facts) held() bool {
	return f.Reason == causes.Delete && f.HasFinalizer && f.DaemonsHolding
}

// Holds reports, before a cycle for the reason runs, whether the pass will
// end with Hold once the cycle is done: the cycle must then keep its done
// records (handling.Cycle.KeepDone), for the delete handlers' successes
// stay on the object until it is released, or an operator that dies before
// the daemons have exited would run the handlers again.
func Holds(f Facts, reason causes.Reason) bool {
	return reason == causes.Delete && f.held()
}
