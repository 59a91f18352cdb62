package reactor

import (
	"context"
	"errors"
	"time"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/daemons"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/patch"
)

// background is what an object's state keeps for its daemons and timers.
type background struct {
	set *daemons.Set
	// essence is the object's essence at the previous pass, to tell
	// essential changes (which reset idle timers) from the rest.
	essence map[string]any
	// deleteHandled: the delete handlers have finished, and only daemons
	// still stopping keep the finalizer on the object.
	deleteHandled bool
}

// spawn is step 3 of Kopf's processing order (compat: handlers-order): on every pass, spawn
// the daemons and timers the object matches, stop those it no longer
// matches, or stop them all when the object is being deleted; then record in
// the pass's facts whether they require the finalizer and hold the object.
// Their exits wake the object's worker, which is how the finalizer goes as
// soon as nothing needs it, without any touch patch. Only for resources
// with daemons or timers: read does not call it otherwise.
func (w *watcher) spawn(ctx context.Context, wk *worker, ps *pass) {
	bg := w.backgroundOf(ctx, wk.key, ps)
	f := &ps.facts
	if f.Deleting {
		bg.set.Stop(handlers.ErrResourceDeleted)
		f.DaemonsHolding = bg.set.Holding()
		f.DaemonsRequire = f.DaemonsHolding
		ps.state.mu.Lock()
		f.DeleteHandled = bg.deleteHandled
		ps.state.mu.Unlock()
		return
	}
	if w.idleTimers {
		w.noteChanges(ps.obj.Object, ps.state, bg)
	}
	matching := w.matchingSpawning(ps.obj.Object)
	bg.set.Sync(matching)
	f.DaemonsRequire, f.DaemonsHolding = bg.set.Requires(matching), bg.set.Holding()
}

// matchingSpawning returns the daemons and timers whose filters match the
// object. Re-evaluated on every pass, so that an object that stops matching
// loses its daemons (ErrFiltersMismatch) and gets them back when it matches
// again (compat: daemons-filters, timers-filters).
func (w *watcher) matchingSpawning(body map[string]any) []*handling.Spawning {
	cause := &handling.Cause{Body: body, Resource: w.res, Logger: w.Logger}
	var out []*handling.Spawning
	for _, h := range w.spawning {
		if h.MatchesObject(cause) {
			out = append(out, h)
		}
	}
	return out
}

// noteChanges resets the idle timers when the object's essence differs from
// the previous pass's: spec, labels, annotations (not status, not the
// operator's own annotations). This is kopfgo's reading of "changes" for
// Idle (compat: timers-idle): the changes that would trigger update handlers, whether or
// not there are any; a timer's own status results do not postpone it.
func (w *watcher) noteChanges(body map[string]any, st *state, bg *background) {
	essence := w.detector.Essence(body)
	st.mu.Lock()
	prev := bg.essence
	bg.essence = essence
	st.mu.Unlock()
	if prev != nil && len(handling.DiffOf(prev, essence)) > 0 {
		bg.set.Changed(w.Clock.Now())
	}
}

// backgroundOf returns the object's daemons, creating the set on the first
// pass: its idle clock starts there, the first sighting being a change.
func (w *watcher) backgroundOf(ctx context.Context, key string, ps *pass) *background {
	st := ps.state
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.background != nil {
		return st.background
	}
	u, log := ps.obj, ps.log
	uid, ns, name := string(u.GetUID()), u.GetNamespace(), u.GetName()
	observe := w.observeHandler(ns)
	st.background = &background{set: w.daemons.NewSet(daemons.Object{
		Resource: w.res,
		Logger:   log,
		Memo:     ps.cause.Memo,
		Live: func() (map[string]any, bool) {
			cur, ok := w.latest(key)
			if !ok {
				return nil, false
			}
			return cur.Object, string(cur.GetUID()) == uid
		},
		Apply: func(ctx context.Context, pt *patch.Patch) error {
			if cur, ok := w.latest(key); ok && len(pt.Conditions()) > 0 {
				// The daemon's or timer's own conditions, merged into
				// the freshest list at hand.
				handling.WriteConditions(cur.Object, pt, w.Clock.Now())
				if pt.IsEmpty() && len(pt.Fns) == 0 {
					return nil
				}
			}
			logPatch(ctx, log, pt)
			_, err := w.client.Apply(ctx, w.res, ns, name, pt)
			if errors.Is(err, kube.ErrGone) {
				return nil
			}
			return err
		},
		Wake: func() { w.poke(ctx, key) },
		Observe: func(id, kind string, err error, retry int, d time.Duration) {
			observe(id, causes.Reason(kind), err, retry, d) // hook: handler invocations
		},
	})}
	return st.background
}

// holdDeletion remembers that the delete handlers are done while daemons
// still hold the object, so that the pass woken by their exit only
// releases it.
func (s *state) holdDeletion() {
	s.mu.Lock()
	if s.background != nil {
		s.background.deleteHandled = true
	}
	s.mu.Unlock()
}

// forget stops the daemons of an object that is gone without them having
// been stopped (its finalizer was removed by someone else, or it was never
// required). It does not wait: the caller holds the watcher's lock.
func (s *state) forget() {
	s.mu.Lock()
	bg := s.background
	s.mu.Unlock()
	if bg != nil {
		bg.set.Forget()
	}
}
