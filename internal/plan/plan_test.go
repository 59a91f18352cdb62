package plan

import (
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/internal/causes"
)

// The cases follow Kopf's decision matrix: its reactor's processing (when
// the finalizer is added or removed, stealth mode, consistency, release
// after the deletion) and its processing tests (a create, update or delete
// cause runs its handlers; gone, free and noop causes patch nothing).
func TestPass(t *testing.T) {
	const d = 7 * time.Second
	handled := Facts{Changing: true, InScope: true}
	with := func(f Facts, change func(*Facts)) Facts { change(&f); return f }
	for _, tc := range []struct {
		name string
		f    Facts
		want Step
	}{
		// An outcome not written yet comes before anything else: the
		// handlers that made it must not run again.
		{"unwritten outcome", with(handled, func(f *Facts) { f.Unwritten, f.Reason = true, causes.Create }), Step{Action: Rewrite}},
		{"unwritten outcome, stale body", Facts{Unwritten: true, Stale: true}, Step{Action: Rewrite}},
		{"unwritten outcome, own patch not back", Facts{Unwritten: true, Pending: d}, Step{Action: Rewrite}},
		{"unwritten outcome, deleting", Facts{Unwritten: true, Deleting: true, HasFinalizer: true, Changing: true, InScope: true}, Step{Action: Rewrite}},

		// Consistency comes next.
		{"stale body", with(handled, func(f *Facts) { f.Stale, f.Reason = true, causes.Create }), Step{Action: Nothing}},
		{"stale body while waiting for the own patch", Facts{Stale: true, Pending: d}, Step{Action: Nothing}},
		{"own patch not back yet", with(handled, func(f *Facts) { f.Pending, f.Reason = d, causes.Update }), Step{Action: Wait, Wait: d}},
		{"own patch not back, finalizer missing", Facts{Pending: d, DaemonsRequire: true}, Step{Action: Wait, Wait: d}},

		// Causes for handlers run their handlers.
		{"create", with(handled, func(f *Facts) { f.Reason = causes.Create }), Step{Action: Handle, Reason: causes.Create}},
		{"update", with(handled, func(f *Facts) { f.Reason = causes.Update }), Step{Action: Handle, Reason: causes.Update}},
		{"resume", with(handled, func(f *Facts) { f.Reason = causes.Resume }), Step{Action: Handle, Reason: causes.Resume}},
		{"create with the required finalizer in place", with(handled, func(f *Facts) {
			f.Reason, f.HandlersRequire, f.HasFinalizer = causes.Create, true, true
		}), Step{Action: Handle, Reason: causes.Create}},
		{"delete", with(handled, func(f *Facts) {
			f.Reason, f.Deleting, f.HasFinalizer, f.HandlersRequire = causes.Delete, true, true, true
		}), Step{Action: Handle, Reason: causes.Delete}},
		{"delete by optional handlers only", with(handled, func(f *Facts) {
			f.Reason, f.Deleting, f.HasFinalizer = causes.Delete, true, true
		}), Step{Action: Handle, Reason: causes.Delete}},
		{"delete while daemons stop", with(handled, func(f *Facts) {
			f.Reason, f.Deleting, f.HasFinalizer, f.DaemonsRequire, f.DaemonsHolding = causes.Delete, true, true, true, true
		}), Step{Action: Handle, Reason: causes.Delete}},

		// Informational causes do nothing.
		{"noop", with(handled, func(f *Facts) { f.Reason = causes.Noop }), Step{Action: Noop}},
		{"free: deleting without the finalizer", with(handled, func(f *Facts) { f.Reason, f.Deleting = causes.Free, true }), Step{Action: Free}},
		{"free with daemons holding", with(handled, func(f *Facts) {
			f.Reason, f.Deleting, f.DaemonsRequire, f.DaemonsHolding = causes.Free, true, true, true
		}), Step{Action: Free}},
		{"free out of scope", with(handled, func(f *Facts) { f.Reason, f.Deleting, f.InScope = causes.Free, true, false }), Step{Action: Nothing}},

		// The finalizer goes on alone, and the handlers run on the next pass.
		{"delete handler needs the finalizer", with(handled, func(f *Facts) { f.Reason, f.HandlersRequire = causes.Create, true }), Step{Action: AddFinalizer}},
		{"daemon needs the finalizer", with(handled, func(f *Facts) { f.Reason, f.DaemonsRequire = causes.Update, true }), Step{Action: AddFinalizer}},
		{"daemons only, finalizer missing", Facts{DaemonsRequire: true}, Step{Action: AddFinalizer}},
		{"daemons only, finalizer in place", Facts{DaemonsRequire: true, HasFinalizer: true}, Step{Action: Nothing}},
		{"out of scope, a delete handler would need it", with(handled, func(f *Facts) {
			f.Reason, f.InScope, f.HandlersRequire = causes.Create, false, true
		}), Step{Action: Nothing}},

		// The finalizer goes off alone when nothing requires it.
		{"no longer required", with(handled, func(f *Facts) { f.Reason, f.HasFinalizer = causes.Update, true }), Step{Action: RemoveFinalizer}},
		{"daemons only, no longer required", Facts{HasFinalizer: true}, Step{Action: RemoveFinalizer}},
		{"left by an earlier operator, out of scope", with(handled, func(f *Facts) {
			f.Reason, f.InScope, f.HasFinalizer = causes.Update, false, true
		}), Step{Action: RemoveFinalizer}},
		{"deleting out of scope", with(handled, func(f *Facts) {
			f.Reason, f.InScope, f.Deleting, f.HasFinalizer = causes.Delete, false, true, true
		}), Step{Action: RemoveFinalizer}},

		// Stealth mode: an object out of every handler's scope is left alone.
		{"out of scope", with(handled, func(f *Facts) { f.Reason, f.InScope = causes.Create, false }), Step{Action: Nothing}},
		{"deleting out of scope, daemons holding", with(handled, func(f *Facts) {
			f.Reason, f.InScope, f.Deleting, f.HasFinalizer, f.DaemonsRequire, f.DaemonsHolding = causes.Delete, false, true, true, true, true
		}), Step{Action: Nothing}},
		{"no handlers and no daemons", Facts{}, Step{Action: Nothing}},

		// Release once nothing holds the object.
		{"daemons only, deleting, holding", Facts{Deleting: true, HasFinalizer: true, DaemonsRequire: true, DaemonsHolding: true}, Step{Action: Nothing}},
		{"daemons only, deleting, exited", Facts{Deleting: true, HasFinalizer: true}, Step{Action: Release}},
		{"daemons only, deleting, no finalizer", Facts{Deleting: true}, Step{Action: Nothing}},
		// Delete handlers that finished are not run again.
		{"delete handled, daemons holding", Facts{Changing: true, Deleting: true, DeleteHandled: true, HasFinalizer: true, DaemonsRequire: true, DaemonsHolding: true},
			Step{Action: Nothing}},
		{"delete handled, daemons exited", Facts{Changing: true, Deleting: true, DeleteHandled: true, HasFinalizer: true}, Step{Action: Release}},
		// The cause facts count only when gathered.
		{"no changing handlers, cause facts ignored", Facts{Reason: causes.Create, InScope: true, HandlersRequire: true}, Step{Action: Nothing}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Pass(tc.f); got != tc.want {
				t.Errorf("Pass(%+v) = %+v, want %+v", tc.f, got, tc.want)
			}
		})
	}
}

func TestAfter(t *testing.T) {
	const d = 30 * time.Second
	deleting := Facts{Changing: true, InScope: true, Reason: causes.Delete, Deleting: true, HasFinalizer: true}
	for _, tc := range []struct {
		name string
		f    Facts
		o    Outcome
		want Step
	}{
		{"created", Facts{Reason: causes.Create}, Outcome{Done: true, Ran: true}, Step{Action: Store}},
		{"created without handlers", Facts{Reason: causes.Create}, Outcome{Done: true}, Step{Action: Store}},
		{"updated", Facts{Reason: causes.Update}, Outcome{Done: true, Ran: true}, Step{Action: Store}},
		{"resumed", Facts{Reason: causes.Resume}, Outcome{Done: true, Ran: true}, Step{Action: Store}},
		{"a handler due later", Facts{Reason: causes.Create}, Outcome{Delay: d, Ran: true}, Step{Action: Sleep, Wait: d}},
		{"another handler due now", Facts{Reason: causes.Update}, Outcome{Ran: true}, Step{Action: Apply}},
		{"deleted", deleting, Outcome{Done: true, Ran: true}, Step{Action: Release}},
		{"deleted, daemons holding", func() Facts { f := deleting; f.DaemonsHolding = true; return f }(), Outcome{Done: true, Ran: true}, Step{Action: Hold}},
		{"deletion retried later", deleting, Outcome{Delay: d, Ran: true}, Step{Action: Sleep, Wait: d}},
		{"stopping before any handler ran", Facts{Reason: causes.Create}, Outcome{Done: true, Stopping: true}, Step{Action: Discard}},
		// A handler that has run has its outcome stored, stopping or not.
		{"stopping after a handler ran", Facts{Reason: causes.Create}, Outcome{Done: true, Ran: true, Stopping: true}, Step{Action: Store}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := After(tc.f, tc.o); got != tc.want {
				t.Errorf("After(%+v, %+v) = %+v, want %+v", tc.f, tc.o, got, tc.want)
			}
		})
	}
}

func BenchmarkPass(b *testing.B) {
	f := Facts{Changing: true, InScope: true, Reason: causes.Update, HasFinalizer: true, HandlersRequire: true}
	b.ReportAllocs()
	for b.Loop() {
		Pass(f)
	}
}
