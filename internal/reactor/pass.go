package reactor

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/plan"
	"github.com/kopfgo/kopfgo/internal/pyrepr"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/internal/tracing"
	"github.com/kopfgo/kopfgo/patch"
)

// pass is one pass over an object: what read found, for plan and act.
type pass struct {
	obj   *unstructured.Unstructured
	state *state
	log   *slog.Logger
	facts plan.Facts
	// cause is the object as handlers and filters see it, with the patch
	// the pass builds; its Reason, Old, New and Diff are set only when the
	// facts call for detection (plan.Facts.Detects).
	cause *handling.Cause
	// cycled: a handling cycle has run in this pass (handle).
	cycled bool
}

// process runs one pass over the object's latest state: read the facts,
// plan the one step they call for, and act on it. A Handle step runs the
// handling cycle first, and its outcome gives the step that ends the pass.
func (w *watcher) process(ctx context.Context, wk *worker) next {
	ps, ok := w.read(ctx, wk)
	if !ok {
		return onNews // gone: its state went with the DELETED observation
	}
	step := plan.Pass(ps.facts)
	if step.Action == plan.Handle {
		step = plan.After(ps.facts, w.handle(ctx, ps, step.Reason))
	}
	n := w.act(ctx, ps, step)
	w.trace(ctx, step)
	return n
}

// trace names the step on the pass's span, after the step: the span starts
// only once the pass acts (acting), which may be in the step itself.
func (w *watcher) trace(ctx context.Context, step plan.Step) {
	if w.Tracer != nil {
		tracing.Step(ctx, step.Action)
	}
}

// acting starts the pass's span when tracing is on, for what the pass does
// next: a handler call or an API request, the span's children. A pass that
// does neither (an object already handled, a stale body) makes no span.
func (w *watcher) acting(ctx context.Context) context.Context {
	if w.Tracer == nil {
		return ctx
	}
	return tracing.Act(ctx)
}

// read gathers the facts of a pass. The body must be consistent first: not
// older than the watch's latest version, nor than the operator's own latest
// patch; when it is not, those are the only facts. It returns false when
// the object is gone.
func (w *watcher) read(ctx context.Context, wk *worker) (*pass, bool) {
	u, exists := w.latest(wk.key)
	if !exists {
		return nil, false
	}
	st, exists := w.stateOf(wk, string(u.GetUID()))
	if !exists {
		return nil, false
	}
	ps := &pass{obj: u, state: st, log: w.objectLogger(u)}
	st.mu.Lock()
	ps.facts.Unwritten = st.own != nil && st.own.unwritten != nil && !st.released
	st.mu.Unlock()
	if ps.facts.Unwritten {
		return ps, true // the body only names the object to write to
	}
	if !w.consistent(ctx, ps) {
		return ps, ps.obj != nil
	}
	st.mu.Lock()
	initial := st.initial && !st.handledOnce
	if st.memo == nil {
		st.memo = &handlers.Memo{}
	}
	memo := st.memo
	st.mu.Unlock()

	body := ps.obj.Object
	ps.cause = &handling.Cause{
		Body: body, Initial: initial, Resource: w.res, Patch: &patch.Patch{}, Logger: ps.log, Memo: memo,
		Handling: w.Settings.Handling,
	}
	f := &ps.facts
	f.Deleting, f.HasFinalizer = w.detector.Marks(body)
	f.Changing = len(w.changing) > 0
	if len(w.spawning) > 0 {
		w.spawn(ctx, wk, ps)
	}
	if f.Detects() {
		det := w.detector.Detect(ps.cause)
		f.Reason, f.InScope, f.HandlersRequire = det.Reason, det.InScope, det.HandlersRequire
	}
	return ps, true
}

// consistent checks the body against the versions the watch and the
// operator's own patches have produced, and reports whether the pass can go
// on with it; if not, ps.facts say why (Stale, Pending), or ps.obj is nil
// because the object is gone. When the operator's own patch has not come
// back within the consistency timeout, the object is re-read from the API.
func (w *watcher) consistent(ctx context.Context, ps *pass) bool {
	st, u := ps.state, ps.obj
	now := w.Clock.Now()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.released {
		ps.facts.Stale = true // deleted for good; the DELETED event drops the state
		return false
	}
	if st.behind(u.GetResourceVersion()) {
		ps.facts.Stale = true // the newer version's observation wakes the worker again
		return false
	}
	if st.vanished != nil {
		if slices.Contains(st.vanished, u.GetResourceVersion()) {
			ps.facts.Stale = true // gone: the DELETED event drops the state
			return false
		}
		st.vanished = nil // changed since the 404: the object is there after all
	}
	expected, expectedAt := st.expecting()
	if expected == "" || u.GetResourceVersion() == expected {
		return true
	}
	if left := w.Settings.Persistence.ConsistencyTimeout - now.Sub(expectedAt); left > 0 {
		ps.facts.Pending = left
		return false
	}
	// The cached state predates the operator's own patch: acting on it
	// could run the handlers it already ran. The API has the truth.
	ps.log.Debug(fmt.Sprintf("The operator's own patch (resourceVersion %s) has not come back within the consistency timeout; re-reading the object.", expected))
	st.fly()
	st.mu.Unlock()
	fresh, err := w.reread(w.acting(ctx), u)
	st.mu.Lock()
	if err != nil {
		// Going on with the cached state would run the handlers again
		// whose outcome that patch wrote: wait, and re-read again then.
		st.land("", now)
		d := w.throttle(st)
		ps.log.Log(ctx, levelOf(err, slog.LevelError), fmt.Sprintf("Cannot re-read the object; trying again in %g seconds: %v", d.Seconds(), err))
		ps.facts.Pending = d
		return false
	}
	st.errors = 0
	if st.own.expected == expected {
		st.own.expected = "" // unless the watch has delivered it meanwhile
	}
	rv := "" // the re-read's version: older versions the watch is still to deliver are sat out
	if fresh != nil && fresh.GetResourceVersion() != u.GetResourceVersion() {
		rv = fresh.GetResourceVersion()
	}
	st.land(rv, now)
	if fresh == nil {
		ps.obj = nil
		return false
	}
	ps.obj = fresh
	return true
}

// goodbye writes Kopf's last line about an object deleted from the cluster
// that the changing handlers have in scope, in the order Kopf writes it:
// after the watching handlers of the deletion. The scope is worked out only
// if the line is to be written.
func (w *watcher) goodbye(ctx context.Context, wk *worker) {
	w.mu.Lock()
	gone := wk.gone
	wk.gone = nil
	w.mu.Unlock()
	if gone == nil {
		return
	}
	u := gone.obj
	log := w.objectLogger(u)
	if !log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	cause := &handling.Cause{
		Body: u.Object, Resource: w.res, Patch: &patch.Patch{}, Logger: log, Memo: gone.state.memo, Handling: w.Settings.Handling,
	}
	if w.detector.Gone(cause) {
		log.Debug("Deleted, really deleted, and we are notified.")
	}
}

// act carries out a step of the plan (any but Handle, which process runs)
// and says when the next pass comes.
func (w *watcher) act(ctx context.Context, ps *pass, step plan.Step) next {
	switch step.Action {
	case plan.Wait:
		return next{wait: step.Wait}
	case plan.AddFinalizer:
		ps.log.Debug("Adding the finalizer, thus preventing the actual deletion.")
		return w.applyFinalizer(ctx, ps, true).then(onNews)
	case plan.RemoveFinalizer:
		ps.log.Debug("Removing the finalizer, as there are no handlers requiring it.")
		return w.applyFinalizer(ctx, ps, false).then(onNews)
	case plan.Release:
		ps.log.Debug("Removing the finalizer, thus allowing the actual deletion.")
		if ps.cycled {
			w.finished(ps)
		}
		return w.applyFinalizer(ctx, ps, false).then(onNews)
	case plan.Noop:
		ps.state.handled()
		ps.log.Debug("Something has changed, but we are not interested (the essence is the same).")
		ps.log.Debug(cycleFinished)
	case plan.Free:
		ps.log.Debug("Deletion, but we are done with it, and we do not care.")
		ps.log.Debug(cycleFinished)
	case plan.Rewrite:
		return w.rewrite(ctx, ps)
	case plan.Apply:
		w.finished(ps)
		return w.apply(ctx, ps.obj, ps.state, ps.log, ps.cause.Patch).then(onNews)
	case plan.Sleep:
		secs := pyrepr.Float(step.Wait.Seconds())
		if !ps.cause.Patch.IsEmpty() {
			// The patch's own observation wakes the object before the delay
			// ends; the delay is computed anew then.
			ps.log.Debug(fmt.Sprintf("Sleeping was skipped because of the patch, %s seconds left.", secs))
			return w.apply(ctx, ps.obj, ps.state, ps.log, ps.cause.Patch).then(next{wait: step.Wait, touch: true})
		}
		ps.log.Debug(fmt.Sprintf("Sleeping for %s seconds for the delayed handlers.", secs))
		return w.apply(ctx, ps.obj, ps.state, ps.log, ps.cause.Patch).then(next{wait: step.Wait, touch: true, sleeping: true})
	case plan.Store:
		w.detector.Handled(ps.cause)
		w.finished(ps)
		return w.apply(ctx, ps.obj, ps.state, ps.log, ps.cause.Patch).then(onNews)
	case plan.Hold:
		ps.state.holdDeletion()
		ps.log.Debug("Deletion is held until the daemons and timers have exited.")
		if w.kept.ProgressOnly(ps.cause.Patch) {
			ps.log.Debug(cycleFinished) // nothing but the delete handlers' records to patch
		}
		return w.apply(ctx, ps.obj, ps.state, ps.log, ps.cause.Patch).then(onNews)
	}
	return onNews // Nothing, Discard
}

// handle runs one handling cycle for the reason (at most one handler) and
// says what came of it, for plan.After.
func (w *watcher) handle(ctx context.Context, ps *pass, reason causes.Reason) plan.Outcome {
	c := ps.cause
	cycle := handling.Cycle{
		Reason: reason, Handlers: handling.Select(w.changing, c), Known: w.changing,
		Body: c.Body, Resource: w.res, Old: c.Old, New: c.New, Diff: c.Diff,
		Patch: c.Patch, Storage: w.kept, Clock: w.Clock, Logger: ps.log, Memo: c.Memo,
		DefaultBackoff: w.Settings.Execution.DefaultBackoff,
		Handling:       w.Settings.Handling,
		Observe:        w.observeHandler(ps.obj.GetNamespace()), // hook: handler invocations
		Tracer:         w.Tracer,
		// A deletion that daemons hold ends with Hold, not with the
		// release: the delete handlers' successes go onto the object
		// then, or an operator that dies before the daemons have exited
		// would run the handlers again. The release removes the object.
		KeepDone:   plan.Holds(ps.facts, reason),
		Conditions: w.conditions,
	}
	logProgress(ctx, ps.log, reason, c.Body, c.Old, c.New, c.Diff)
	out := cycle.Run(w.handlerContext(ctx))
	ps.cycled = true
	// Now, not when the patch goes: whether the patch is empty decides
	// what the pass logs.
	if w.res.HasStatus() && !w.Settings.Persistence.Conditions.EveryPass {
		handling.WriteConditionsOrDefer(c.Body, c.Patch, w.Clock.Now()) // no request of its own for news of nothing
	} else {
		handling.WriteConditions(c.Body, c.Patch, w.Clock.Now())
	}
	if out.Done {
		ps.state.handled()
	}
	return plan.Outcome{Done: out.Done, Delay: out.Delay, Ran: out.Ran, Stopping: ctx.Err() != nil}
}

// conditionsOn reports whether the framework keeps its status.conditions
// on the objects of a resource: only on custom resources, and not when the
// settings turn them off. A built-in kind's conditions belong to its own
// controllers (a Pod's Ready is the kubelet's, a Deployment's Progressing
// the deployment controller's), and a merge patch of the list would race
// with them. Built-in kinds are the core group and the groups without a
// dot or under k8s.io and kubernetes.io (CRDs of those groups, such as the
// Gateway API's, are left alone too).
func conditionsOn(s config.Conditions, res resources.Resource) bool {
	g := res.Group
	builtIn := !strings.Contains(g, ".") || strings.HasSuffix(g, ".k8s.io") || strings.HasSuffix(g, ".kubernetes.io")
	return !s.Disabled && !builtIn
}

// cycleFinished is Kopf's line for an object whose handling has settled.
const cycleFinished = "Handling cycle is finished, waiting for new changes."

// finished writes cycleFinished at the end of a pass whose cycle has run,
// when the object has settled: the cycle leaves nothing to patch (the
// finalizer's removal aside) and no handler is delayed. Kopf's signal that
// users and tests wait for.
func (w *watcher) finished(ps *pass) {
	if ps.cause.Patch.IsEmpty() {
		ps.log.Debug(cycleFinished)
	}
}

// logProgress writes Kopf's debug lines of a cause on every cycle, handlers
// or not: the object's body and, for a change of a handled object, the diff,
// both as Python's repr() (internal/pyrepr). Rendering a whole body is the
// costliest line per pass, so nothing is rendered unless debug is on.
func logProgress(ctx context.Context, log *slog.Logger, reason causes.Reason, body, old, essence map[string]any, diff handling.Diff) {
	if !log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	title := reason.Title()
	log.Debug(title + " is in progress: " + pyrepr.Repr(body))
	if len(diff) > 0 && old != nil && essence != nil {
		log.Debug(title + " diff: " + reprDiff(diff))
	}
}

// reprDiff renders a diff as Kopf's repr() of its diff: a tuple of
// (operation, field path, old, new) tuples.
func reprDiff(d handling.Diff) string {
	items := make(pyrepr.Tuple, len(d))
	for i, it := range d {
		path := make(pyrepr.Tuple, len(it.Path))
		for j, k := range it.Path {
			path[j] = k
		}
		items[i] = pyrepr.Tuple{string(it.Op), path, it.Old, it.New}
	}
	return pyrepr.Repr(items)
}
