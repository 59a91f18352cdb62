package handling

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/handlers"
)

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
