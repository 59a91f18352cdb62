package handling

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/internal/tracing"
	"github.com/kopfgo/kopfgo/patch"
)

// Cycle is one round of Kopf's handling cycle for one cause of one object
// (compat: handlers-cycle): it runs at most one handler, the awake one with the fewest
// retries, records its outcome in Patch, and says whether the cause is fully
// handled or when to come back. The reactor applies Patch and, while handlers
// remain, runs the next round in its next pass over the object's next
// state, so that each handler's progress is persisted before the next one
// starts. (A pass is the reactor's run over an object, of which a round is
// one step: see the glossary in docs/architecture.md.)
type Cycle struct {
	Reason causes.Reason
	// Title names the cause in logs ("Creation is processed: …"); default:
	// the reason's title.
	Title string
	// Kind names the handlers in logs ("Handler 'x' succeeded."); default
	// "Handler". Activities are "Activity", and their cycle logs no
	// "is processed" line, as in Kopf.
	Kind     string
	Handlers []*Handler // selected for this cause, in registration order
	// Known are all handlers of the resource: their stale records (from a
	// superseded cause) are purged when the cause is done.
	Known    []*Handler
	Body     map[string]any
	Resource resources.Resource
	Old      map[string]any
	New      map[string]any
	Diff     Diff
	Patch    *patch.Patch
	// Storage keeps the handlers' records: the object's store, or an
	// activity's memory.
	Storage Progress
	Clock   clock.PassiveClock
	Logger  *slog.Logger
	Memo    *handlers.Memo
	// Handling is passed on to the selection of sub-handlers.
	Handling config.Handling
	// DefaultBackoff is the retry delay after arbitrary errors of handlers
	// without their own Backoff.
	DefaultBackoff time.Duration
	// Observe, when set, is told of each handler call: its error (nil on
	// success), the attempt's number (0: the first) and its duration.
	Observe func(id string, reason causes.Reason, err error, retry int, d time.Duration)
	// Tracer, when set, makes each handler call a span, a child of ctx's
	// (the pass's), which the handler's ctx carries. Nil: tracing is off.
	Tracer *tracing.Tracer

	// KeepDone keeps the records of a cause that is done instead of
	// purging them, for a caller that cannot end the cause in this pass: a
	// deletion whose daemons still hold the object keeps its delete
	// handlers' successes on the object until it is released, so that an
	// operator restarted meanwhile does not run them again.
	KeepDone bool
	// Conditions: the cycle sets the framework's status.conditions in
	// Patch after its round (conditions.go); its sub-handlers' cycles
	// never do, their parent's does.
	Conditions bool

	// parent is set in the cycles of sub-handlers (below).
	parent *scope
	// stale are the subrefs of superseded records, purged with the cause.
	stale []string
}

// Outcome is the result of one round.
type Outcome struct {
	// Done means every handler of the cause has finished (succeeded or
	// failed permanently) and their records are purged.
	Done bool
	// Delay is, when not Done, how long until a handler is due; zero means
	// at once (another handler is awake).
	Delay     time.Duration
	Succeeded int
	Failed    int
	// Ran reports whether a handler was invoked in this round.
	Ran bool
	// Err is the error of a handler that failed permanently in this round
	// (see Verdict.Err), for callers that report it rather than persist it.
	Err error
}

type state struct {
	h   *Handler
	rec *Record
}

func (s state) finished() bool { return s.rec != nil && (s.rec.Success || s.rec.Failure) }

func (s state) awake(now time.Time) bool {
	return s.rec == nil || s.rec.Delayed == nil || !s.rec.Delayed.After(now)
}

func (s state) retries() int {
	if s.rec == nil {
		return 0
	}
	return s.rec.Retries
}

// Run executes one round.
func (c *Cycle) Run(ctx context.Context) Outcome {
	now := c.Clock.Now()
	states := c.fetch()

	var next *state
	for i := range states {
		s := &states[i]
		if s.finished() || !s.awake(now) {
			continue
		}
		if next == nil || s.retries() < next.retries() {
			next = s
		}
	}
	ran := false
	var failed error
	if next != nil {
		next.rec, failed = c.attempt(ctx, next.h, next.rec)
		c.Storage.Store(next.h.ID, next.rec, c.Body, c.Patch)
		ran = true
	}

	out := Outcome{Ran: ran, Err: failed, Delay: time.Duration(math.MaxInt64)}
	done := true
	for _, s := range states {
		switch {
		case s.rec != nil && s.rec.Success:
			out.Succeeded++
		case s.rec != nil && s.rec.Failure:
			out.Failed++
		default:
			done = false
			out.Delay = min(out.Delay, c.delayOf(s, now))
		}
	}
	title := c.Title
	if title == "" {
		title = c.Reason.Title()
	}
	if c.Conditions && c.parent == nil {
		c.setConditions(title, done, states)
	}
	if !done {
		return out
	}
	out.Done, out.Delay = true, 0
	if len(c.Handlers) > 0 && c.Kind == "" {
		// Kopf says nothing of a cause without handlers (compat: logging-lines): every
		// object found at start-up would log a line otherwise.
		c.Logger.Info(fmt.Sprintf("%s is processed: %d succeeded; %d failed.", title, out.Succeeded, out.Failed))
	}
	if !c.KeepDone {
		c.purge(states)
	}
	return out
}

// setConditions puts the framework's conditions for the cycle's state
// into the patch, to be merged into the object's list when it is sent.
func (c *Cycle) setConditions(title string, done bool, states []state) {
	hs := make([]handlerState, len(states))
	for i, s := range states {
		hs[i].ID = s.h.ID
		if s.rec != nil {
			hs[i].Succeeded, hs[i].Failed, hs[i].Retries, hs[i].Message = s.rec.Success, s.rec.Failure, s.rec.Retries, s.rec.Message
		}
	}
	for _, ch := range conditionsFor(cycleState{Title: title, Done: done, Deleting: c.Reason == causes.Delete, Handlers: hs}) {
		c.Patch.ChangeCondition(ch)
	}
}

func (c *Cycle) delayOf(s state, now time.Time) time.Duration {
	if s.awake(now) {
		return 0
	}
	return s.rec.Delayed.Sub(now)
}

// fetch reads the records of the cause's handlers. A record of another
// purpose belongs to a superseded cause and does not count for this one.
func (c *Cycle) fetch() []state {
	states := make([]state, len(c.Handlers))
	var extras []extra
	for i, h := range c.Handlers {
		states[i].h = h
		rec, err := c.Storage.Fetch(h.ID, c.Body)
		if err != nil {
			c.Logger.Warn(fmt.Sprintf("Ignoring the unreadable progress of handler %q (it starts afresh): %v", h.ID, err))
			continue
		}
		if rec != nil && rec.Purpose != "" && rec.Purpose != string(c.Reason) {
			extras = countExtra(extras, rec)
			c.stale = append(c.stale, rec.Subrefs...)
			continue
		}
		states[i].rec = rec
	}
	for _, e := range extras {
		c.Logger.Info(fmt.Sprintf("%s is superseded by %s: %d succeeded; %d failed; %d left to the moment.",
			causes.Reason(e.purpose).Title(), strings.ToLower(c.Reason.Title()), e.succeeded, e.failed, e.running))
	}
	return states
}

// extra counts the records of one superseded purpose, for Kopf's line.
type extra struct {
	purpose                    string
	succeeded, failed, running int
}

func countExtra(extras []extra, rec *Record) []extra {
	i := slices.IndexFunc(extras, func(e extra) bool { return e.purpose == rec.Purpose })
	if i < 0 {
		extras = append(extras, extra{purpose: rec.Purpose})
		i = len(extras) - 1
	}
	switch {
	case rec.Success:
		extras[i].succeeded++
	case rec.Failure:
		extras[i].failed++
	default:
		extras[i].running++
	}
	return extras
}

// purge removes the records of the cause's handlers, of every handler of the
// resource (stale records of superseded causes), and of the sub-handlers
// their records list.
func (c *Cycle) purge(states []state) {
	seen := map[string]bool{}
	drop := func(id string) {
		if !seen[id] {
			seen[id] = true
			c.Storage.Purge(id, c.Body, c.Patch)
		}
	}
	for _, hs := range [][]*Handler{c.Handlers, c.Known} {
		for _, h := range hs {
			drop(h.ID)
		}
	}
	for _, s := range states {
		if s.rec != nil {
			for _, ref := range s.rec.Subrefs {
				drop(ref)
			}
		}
	}
	for _, ref := range c.stale {
		drop(ref)
	}
}

// attempt invokes the handler once (or fails it without a call when its
// timeout or retries are used up) and returns its new record, and the error
// it failed with if it failed permanently.
func (c *Cycle) attempt(ctx context.Context, h *Handler, prev *Record) (*Record, error) {
	// Records keep microseconds (Kopf's format): the handler must see the
	// same Started on its first attempt as on the retries.
	now := c.Clock.Now().UTC().Truncate(time.Microsecond)
	rec := Record{Purpose: string(c.Reason)}
	if prev != nil {
		rec = *prev
		rec.Purpose = string(c.Reason)
	}
	if rec.Started == nil {
		t := now
		rec.Started = &t
	}
	runtime := now.Sub(*rec.Started)
	log := c.Logger
	kind := c.Kind
	if kind == "" {
		kind = "Handler"
	}
	title := Title(kind, h.ID)
	// Kopf says so before its checks of timeouts and retries.
	log.Debug(title + " is invoked.")

	fail := func(msg string, err error) (*Record, error) {
		log.Error(msg)
		rec.Failure, rec.Stopped, rec.Delayed, rec.Message = true, &now, nil, msg
		return &rec, err
	}
	if v, expired := Expired(h, title, rec.Retries, runtime); expired {
		return fail(v.Message, v.Err)
	}

	hctx := ctx
	var span trace.Span
	if c.Tracer != nil {
		hctx, span = c.Tracer.Handler(ctx, h.ID, string(c.Reason), rec.Retries)
	}
	result, sub, err := c.invoke(hctx, h, rec, runtime)
	if span != nil {
		tracing.End(span, OutcomeOf(err), err)
	}
	rec.Subrefs = mergeRefs(rec.Subrefs, sub.refs)
	if err != nil && ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		// The operator is exiting and has cancelled the handler: that says
		// nothing about the handler, so the attempt does not count; the
		// record keeps its start time and retries, and the handler runs
		// again, at once, when the operator restarts.
		log.Warn(title + " is cancelled. Will escalate.")
		rec.Message = "interrupted by the operator's exit"
		return &rec, nil
	}
	end := c.Clock.Now().UTC().Truncate(time.Microsecond)
	if c.Observe != nil {
		c.Observe(h.ID, c.Reason, err, rec.Retries, end.Sub(now))
	}
	rec.Retries++
	if sub.pending && (err == nil || errors.Is(err, handlers.ErrSubhandlersPending)) {
		// Not a failure: the parent is invoked again when a child is due,
		// and its result is delivered only once all children are done.
		log.Debug(title + " has unfinished sub-handlers. Will retry soon.")
		until := end.Add(sub.delay)
		rec.Delayed, rec.Message = &until, ""
		return &rec, nil
	}

	if err == nil && result != nil {
		if err := deliver(c.Patch, h.ID, result); err != nil {
			return fail(fmt.Sprintf("%s returned a result that cannot be stored in status: %v", title, err),
				fmt.Errorf("handler %q returned a result that cannot be stored in status: %w", h.ID, err))
		}
	}

	v := Judge(h, title, err, rec.Retries, runtime, c.DefaultBackoff)
	v.Log(log)
	switch {
	case v.Failed:
		rec.Failure, rec.Stopped, rec.Delayed, rec.Message = true, &now, nil, v.Message
	case v.Done:
		rec.Success, rec.Stopped, rec.Delayed, rec.Message = true, &end, nil, ""
	default:
		until := end.Add(v.Delay)
		rec.Delayed, rec.Message = &until, v.Message
	}
	return &rec, v.Err
}

// OutcomeOf names a handler's error by its kind, as Judge tells them
// apart: success, temporary, permanent or exception (the metrics' and the
// spans' outcome).
func OutcomeOf(err error) string {
	var temp *handlers.TemporaryError
	switch {
	case err == nil:
		return "success"
	case errors.As(err, &temp):
		return "temporary"
	case errors.Is(err, &handlers.PermanentError{}):
		return "permanent"
	}
	return "exception"
}

func seconds(d time.Duration) string {
	return fmt.Sprintf("%g seconds", d.Seconds())
}

func (c *Cycle) invoke(ctx context.Context, h *Handler, rec Record, runtime time.Duration) (result any, sub *scope, err error) {
	if h.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, rec.Started.Add(h.Timeout))
		defer cancel()
	}
	logger := c.Logger
	arg := &handlers.Change{
		Object:  handlers.NewObject(c.Body, c.Resource, c.Patch, logger),
		Attempt: handlers.Attempt{Retry: rec.Retries, Started: *rec.Started, Runtime: runtime},
		Reason:  c.Reason,
	}
	arg.Memo = c.Memo
	arg.Param = h.Param
	arg.Diff = c.Diff
	if c.Old != nil {
		arg.Old = c.Old // a nil map in an interface would not be nil
	}
	if c.New != nil {
		arg.New = c.New
	}
	if c.parent != nil {
		// Sub-handlers see the change as their parent saw it (compat: handlers-subhandlers).
		arg.Old, arg.New, arg.Diff = c.parent.arg.Old, c.parent.arg.New, c.parent.arg.Diff
	}
	if len(h.Field) > 0 {
		arg.Old, _ = dicts.Get(arg.Old, h.Field)
		arg.New, _ = dicts.Get(arg.New, h.Field)
		arg.Diff = arg.Diff.Reduce(h.Field)
	}
	sub = &scope{cycle: c, parent: h, arg: arg, up: c.parent}
	ctx = context.WithValue(ctx, scopeKey{}, sub)
	result, err = safeCall(ctx, h.Fn, arg)
	if err == nil && len(sub.registered) > 0 && !sub.executed {
		// Children declared with Register run after their parent
		// returns, unless it ran them itself (compat: handlers-subhandlers).
		err = Execute(ctx, nil)
	}
	return result, sub, err
}

func safeCall(ctx context.Context, fn handlers.ChangeFunc, arg *handlers.Change) (result any, err error) {
	return protect(ctx, fn, arg)
}

// deliver puts a handler's result at status.<id>: a map merges into what is
// there, anything else replaces it (compat: handlers-results). Results go through JSON so that
// structs are stored as their JSON form.
func deliver(p *patch.Patch, id string, result any) error {
	raw, err := json.Marshal(result)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	status := p.Status()
	if m, ok := v.(map[string]any); ok {
		if cur, ok := status[id].(map[string]any); ok {
			for k, x := range m {
				cur[k] = x
			}
			return nil
		}
		status[id] = m
		return nil
	}
	status[id] = v
	return nil
}

// protect calls a handler function, turning a panic into a PanicError.
func protect[A any](ctx context.Context, fn func(context.Context, A) (any, error), arg A) (result any, err error) {
	defer func() {
		if v := recover(); v != nil {
			result, err = nil, &handlers.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(ctx, arg)
}

// Sub-handlers (compat: handlers-subhandlers; the manual's "Idempotence"): a
// changing handler declares children, either with Execute or with Register;
// each child is a handler of its own with the id "parent/child", its own
// progress record, retries and result. Nothing of the children is kept in
// memory between passes: the parent is invoked again on every pass until all
// its children have finished, re-declares them, and the records on the
// object tell which children are done. A child that has succeeded is never
// invoked again within the cycle.
//
// Within one invocation of the parent, one child runs (the awake one with
// the fewest retries, as at the top level); the parent's record lists the
// children's ids in subrefs so that their records are purged with it.

type scopeKey struct{}

// scope is the sub-handling context of one invocation of a changing
// handler, carried in its ctx.
type scope struct {
	cycle  *Cycle
	parent *Handler
	arg    *handlers.Change // the parent's argument: children see its Old, New, Diff
	up     *scope           // the grandparent's scope for nested sub-handlers

	registered []*Handler
	executed   bool // Execute ran the registered children explicitly

	refs    map[string]bool // ids of children of all levels, for subrefs
	pending bool            // some children are unfinished
	delay   time.Duration   // until the next child is due, when pending
}

func scopeOf(ctx context.Context) *scope {
	s, _ := ctx.Value(scopeKey{}).(*scope)
	return s
}

// Execute runs children of the current handler: fns maps each child's id
// (appended to the parent's: "parent/key") to its function. Keys are taken
// in sorted order, since Go maps have none. With nil fns, it runs the
// children declared with Register so far, which otherwise run implicitly
// after the handler returns.
//
// It returns nil once every child has finished (succeeded, or failed
// permanently), ErrSubhandlersPending while some are not, and
// ErrNoParentHandler outside of a changing handler.
func Execute(ctx context.Context, fns map[string]handlers.ChangeFunc) error {
	s := scopeOf(ctx)
	if s == nil {
		return fmt.Errorf("kopfgo.Execute: %w", handlers.ErrNoParentHandler)
	}
	var children []*Handler
	if fns == nil {
		if s.executed {
			return nil
		}
		s.executed = true
		children = s.registered
	} else {
		for _, key := range slices.Sorted(maps.Keys(fns)) {
			fn := fns[key]
			what := fmt.Sprintf("Execute of %q handler %q", s.parent.ID, key)
			if fn == nil {
				return fmt.Errorf("%w: %s: %s", handlers.ErrRegistration, what, msgNilFunc)
			}
			if key == "" {
				return fmt.Errorf("%w: %s: a sub-handler needs a non-empty id as its key", handlers.ErrRegistration, what)
			}
			full, _ := funcName(fn)
			children = append(children, &Handler{
				ID: s.parent.ID + "/" + key, Reason: s.cycle.Reason, Fn: fn,
				FuncName: full, fnPtr: funcPtr(fn), Resource: s.parent.Resource,
			})
		}
	}
	return s.run(ctx, children)
}

// Register declares a child of the current handler, configured as a
// registration is (id, retries, filters…). The children declared this way
// run after the handler returns without error, unless Execute(ctx, nil) ran
// them earlier. Mistakes (a closure without an id, filters that do not fit)
// are returned at once.
func Register(ctx context.Context, fn handlers.ChangeFunc, configure func(*Handler)) error {
	s := scopeOf(ctx)
	if s == nil {
		return fmt.Errorf("kopfgo.Subhandler: %w", handlers.ErrNoParentHandler)
	}
	h := &Handler{Reason: s.cycle.Reason, Fn: fn}
	if configure != nil {
		configure(h)
	}
	what, errs := h.validate(registration{
		call: fmt.Sprintf("Subhandler of %q", s.parent.ID), noun: "handler", fn: fn,
		update: s.cycle.Reason == causes.Update,
	})
	h.Resource, h.Selector = s.parent.Resource, s.parent.Selector
	h.ID = s.parent.ID + "/" + h.ID
	for _, o := range s.registered {
		if o.ID == h.ID {
			errs = append(errs, duplicate(h.ID, fmt.Sprintf("Subhandler of %q handler %s", s.parent.ID, o.FuncName)))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s: %w", handlers.ErrRegistration, what, errors.Join(errs...))
	}
	s.registered = append(s.registered, h)
	return nil
}

// run is one round over a set of children: select those whose filters match,
// run the next one due, and record what is left.
func (s *scope) run(ctx context.Context, children []*Handler) error {
	c := s.cycle.sub(s)
	cause := &Cause{
		Reason: c.Reason, Body: c.Body, Old: asMap(s.arg.Old), New: asMap(s.arg.New), Diff: s.arg.Diff,
		Resource: c.Resource, Patch: c.Patch, Logger: c.Logger, Memo: c.Memo, Handling: c.Handling, chg: s.arg, obj: &s.arg.Object,
	}
	c.Handlers = Select(children, cause)
	now := c.Clock.Now()
	states := c.fetch()
	var next *state
	for i := range states {
		st := &states[i]
		if st.finished() || !st.awake(now) {
			continue
		}
		if next == nil || st.retries() < next.retries() {
			next = st
		}
	}
	if next != nil {
		// A child's permanent failure counts as finished (compat:
		// handlers-subhandlers): the parent goes on, so its error stays in
		// the child's record.
		next.rec, _ = c.attempt(ctx, next.h, next.rec)
		c.Storage.Store(next.h.ID, next.rec, c.Body, c.Patch)
	}
	delay := time.Duration(math.MaxInt64)
	done := true
	for _, st := range states {
		s.addRef(st.h.ID)
		if st.rec != nil {
			for _, ref := range st.rec.Subrefs {
				s.addRef(ref)
			}
		}
		if !st.finished() {
			done = false
			delay = min(delay, c.delayOf(st, now))
		}
	}
	for _, ref := range c.stale {
		s.addRef(ref)
	}
	if done {
		return nil
	}
	if !s.pending || delay < s.delay {
		s.delay = delay
	}
	s.pending = true
	return handlers.ErrSubhandlersPending
}

// addRef records a child's id with this handler and all its ancestors, so
// that the top-level record lists every level for the final purge.
func (s *scope) addRef(id string) {
	for x := s; x != nil; x = x.up {
		if x.refs == nil {
			x.refs = map[string]bool{}
		}
		x.refs[id] = true
	}
}

// sub returns the cycle that runs the children of a scope: the same object,
// patch and storage, and the parent's view of the change; the children run
// within the parent's pass, and so within its slot of the pass limit.
func (c *Cycle) sub(s *scope) *Cycle {
	sc := *c
	sc.Handlers, sc.Known, sc.stale = nil, nil, nil
	sc.parent = s
	return &sc
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// mergeRefs returns the sorted union of the record's subrefs and new ids.
func mergeRefs(old []string, refs map[string]bool) []string {
	if len(refs) == 0 {
		return old
	}
	set := map[string]bool{}
	for _, r := range old {
		set[r] = true
	}
	for r := range refs {
		set[r] = true
	}
	return slices.Sorted(maps.Keys(set))
}
