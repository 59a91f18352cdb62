package reactor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/internal/flowcontrol"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/patch"
)

// patched is what came of a patch.
type patched struct {
	// gone: the object no longer exists.
	gone bool
	// conflict: the object has changed since the resourceVersion the
	// patch carried (finalizer patches only).
	conflict bool
	// throttled: an unexpected error; the next pass waits for delay.
	throttled bool
	delay     time.Duration
}

// then is when the next pass comes after the patch: n, unless the patch
// failed.
func (r patched) then(n next) next {
	switch {
	case r.throttled:
		return next{wait: r.delay}
	case r.gone, r.conflict:
		return onNews
	}
	return n
}

// apply sends the patch and remembers the resulting version, so that the next
// pass waits for the watch to catch up with it. On unexpected errors, the
// object is throttled with growing delays; other objects are unaffected.
func (w *watcher) apply(ctx context.Context, u *unstructured.Unstructured, st *state, log *slog.Logger, pt *patch.Patch) patched {
	handling.WriteConditions(u.Object, pt, w.Clock.Now()) // the handlers' own, set outside a cycle
	if pt.IsEmpty() && len(pt.Fns) == 0 {
		return patched{}
	}
	ctx = w.acting(ctx)
	w.kept.Untouch(u.Object, pt) // a real patch makes the touch-dummy unnecessary
	logPatch(ctx, log, pt)
	// The outcome of a handler that has run must reach the object even when
	// the operator is stopping, or the handler would run again after restart.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), applyTimeout)
	defer cancel()
	st.mu.Lock()
	st.fly()
	st.mu.Unlock()
	res, err := w.client.Apply(actx, w.res, u.GetNamespace(), u.GetName(), pt)
	if err == nil && len(pt.Fns) > 0 {
		// The handlers' transformations (compat: handlers-patch-fns), after the merge
		// patch, on the object's latest state, as Kopf applies them.
		var rv string
		if rv, err = w.client.Transform(actx, w.res, u.GetNamespace(), u.GetName(), pt.Fns); rv != "" {
			res = rv
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.land(w.expectable(res, err), w.Clock.Now())
	if errors.Is(err, kube.ErrGone) {
		st.vanish(res) // the version of the part that landed, if one did
		log.Debug("The object is gone while patching; nothing to do.")
		return patched{gone: true}
	}
	if apierrors.IsConflict(err) && pt.Has("metadata", "resourceVersion") {
		return patched{conflict: true} // a guarded patch: the caller re-reads and retries
	}
	if err != nil {
		st.keep(pt)
		d := w.throttle(st)
		st.quietly = flowcontrol.Transient(err)
		log.Log(ctx, levelOf(err, slog.LevelError), fmt.Sprintf("Throttling for %g seconds due to an unexpected error: %v", d.Seconds(), err))
		return patched{throttled: true, delay: d}
	}
	if st.errors > 0 {
		level := slog.LevelInfo
		if st.quietly {
			level = slog.LevelDebug
		}
		log.Log(ctx, level, "Throttling is over. Switching back to normal operations.")
	}
	st.errors = 0
	return patched{}
}

// throttle is how long an object waits after another unexpected error in a
// row. Callers hold st.mu.
func (w *watcher) throttle(st *state) time.Duration {
	delays := w.Settings.Queueing.ErrorDelays
	d := delays[min(st.errors, len(delays)-1)]
	st.errors++
	return d
}

// keep remembers a patch that failed to be written, for the next pass to
// write before anything else (plan.Rewrite), together with any kept
// before. A finalizer patch's guard (the resourceVersion it was computed
// from) and its finalizers are not kept: they would conflict later, and
// the pass after the rewrite works the finalizers out anew from the
// outcome written. Callers hold st.mu.
func (st *state) keep(pt *patch.Patch) {
	kept := pt
	if pt.Has("metadata", "resourceVersion") {
		kept = &patch.Patch{Fns: pt.Fns}
		kept.Merge(pt)
		meta := kept.Meta()
		delete(meta, "resourceVersion")
		delete(meta, "finalizers")
		if len(meta) == 0 {
			delete(kept.Map(), "metadata")
		}
	}
	if kept.IsEmpty() && len(kept.Fns) == 0 {
		return
	}
	if st.own == nil {
		st.own = &ownWrites{}
	}
	o := st.own
	if o.unwritten == nil {
		o.unwritten = kept
		return
	}
	o.unwritten.Merge(kept)
	o.unwritten.Fns = append(o.unwritten.Fns, kept.Fns...)
}

// rewrite sends the patch of an earlier pass that failed to be written.
func (w *watcher) rewrite(ctx context.Context, ps *pass) next {
	st := ps.state
	st.mu.Lock()
	var pt *patch.Patch
	if st.own != nil { // it is, as read found it: only this worker keeps and takes it
		pt, st.own.unwritten = st.own.unwritten, nil
		st.tidy()
	}
	st.mu.Unlock()
	if pt == nil {
		return onNews
	}
	ps.log.Debug("Writing the outcome of the last pass again: its patch failed.")
	return w.apply(ctx, ps.obj, st, ps.log, pt).then(onNews)
}

// expectable is the version of an own write that the next pass waits for
// the watch to deliver: none if the write failed or the consistency
// timeout is off.
func (w *watcher) expectable(rv string, err error) string {
	if err != nil || w.Settings.Persistence.ConsistencyTimeout <= 0 {
		return ""
	}
	return rv
}

// applyTimeout bounds the final patch of a pass when the operator stops.
const applyTimeout = 30 * time.Second

// applyFinalizer applies the pass's patch with the finalizer added or
// removed. A merge patch replaces lists whole, so a finalizer list computed
// from a stale body would silently undo another controller's change: the
// patch carries the resourceVersion it was computed from, and on a conflict
// the list is recomputed from the object's current version and sent again.
// The rest of the patch (handlers' outcomes) goes along unchanged, so
// nothing is lost.
func (w *watcher) applyFinalizer(ctx context.Context, ps *pass, add bool) patched {
	fin := w.Settings.Persistence.Finalizer
	pt, cur := ps.cause.Patch, ps.obj
	giveUp := patched{throttled: true, delay: w.Settings.Queueing.ErrorDelays[0]}
	ctx = w.acting(ctx) // a patch, and a re-read after a conflict
	for attempt := 0; ; attempt++ {
		pt.Meta()["resourceVersion"] = cur.GetResourceVersion()
		// The list goes whole: after a conflict it is recomputed from the
		// fresh object, not from the list of the failed attempt, which
		// would restore others' finalizers removed meanwhile.
		delete(pt.Meta(), "finalizers")
		if add {
			causes.AddFinalizer(cur.Object, pt, fin)
		} else {
			causes.RemoveFinalizer(cur.Object, pt, fin)
		}
		r := w.apply(ctx, cur, ps.state, ps.log, pt)
		if !r.conflict {
			left, written := dicts.Get(pt.Map(), []string{"metadata", "finalizers"})
			if list, _ := left.([]any); !add && written && len(list) == 0 && !r.throttled && causes.IsDeleting(cur.Object) {
				ps.state.mu.Lock()
				ps.state.released = true
				ps.state.mu.Unlock()
			}
			return r
		}
		if attempt >= 5 {
			ps.log.Error("Cannot change the finalizers: the object keeps changing; retrying later.")
			return giveUp
		}
		ps.log.Debug("The object has changed meanwhile; recomputing the finalizers.")
		fresh, err := w.client.Get(ctx, w.res, cur.GetNamespace(), cur.GetName())
		if err != nil {
			if errors.Is(err, kube.ErrGone) {
				return patched{gone: true}
			}
			ps.log.Log(ctx, levelOf(err, slog.LevelError), fmt.Sprintf("Cannot re-read the object to change its finalizers: %v", err))
			return giveUp
		}
		cur = fresh
	}
}

// touch wakes delayed handlers: a dummy annotation changes, the watch sees
// the object anew, and the next pass finds the handlers awake.
func (w *watcher) touch(ctx context.Context, wk *worker) {
	u, exists := w.latest(wk.key)
	if !exists {
		return
	}
	st, exists := w.stateOf(wk, string(u.GetUID()))
	if !exists {
		return
	}
	pt := &patch.Patch{}
	w.kept.Touch(u.Object, pt, w.Clock.Now())
	log := w.objectLogger(u)
	log.Debug("Touching the object to wake the delayed handlers.")
	st.mu.Lock()
	st.fly()
	st.mu.Unlock()
	res, err := w.client.Apply(ctx, w.res, u.GetNamespace(), u.GetName(), pt)
	st.mu.Lock()
	st.land(w.expectable(res, err), w.Clock.Now())
	st.mu.Unlock()
	if err != nil && !errors.Is(err, kube.ErrGone) && ctx.Err() == nil {
		log.Log(ctx, levelOf(err, slog.LevelError), fmt.Sprintf("Cannot touch the object to wake its delayed handlers: %v", err))
	}
}

// reread gets the object from the API when the watch lags behind the
// operator's own patches: nil if the object is gone or has been replaced by
// another of the same name, an error if the API cannot answer.
func (w *watcher) reread(ctx context.Context, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	fresh, err := w.client.Get(ctx, w.res, u.GetNamespace(), u.GetName())
	switch {
	case errors.Is(err, kube.ErrGone):
		return nil, nil
	case err != nil:
		return nil, err
	case fresh.GetUID() != u.GetUID():
		return nil, nil // its watch observations are on the way
	}
	if !w.Settings.Watching.KeepManagedFields {
		kube.DropManagedFields(fresh) // as the watched objects are
	}
	return fresh, nil
}

// logPatch logs a patch at debug level, encoding it only when that level is
// on: it happens for every write.
func logPatch(ctx context.Context, log *slog.Logger, pt *patch.Patch) {
	if log.Enabled(ctx, slog.LevelDebug) {
		log.Debug("Patching with: " + mustJSON(pt))
	}
}

// levelOf is the level of a line about a failed request: level for an
// unexpected error, DEBUG for the API server's trouble (5xx, 429, network
// errors), which would otherwise be told once per object; the flow
// control's gate tells an outage in two lines (compat: log-levels-outage).
func levelOf(err error, level slog.Level) slog.Level {
	if flowcontrol.Transient(err) {
		return slog.LevelDebug
	}
	return level
}

func mustJSON(p *patch.Patch) string {
	b, err := p.MarshalJSON()
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}
