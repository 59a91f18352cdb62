package handling

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/patch"
)

// Check is one value filter: an exact value, a Marker, or a callback that
// receives the value (nil when absent). Build it with newCheck.
type Check struct {
	marker handlers.Marker
	value  any // normalised to the JSON-decoded form the body has
	fn     func(any) bool
}

// newCheck turns what the user wrote into a Check. Exact values go through
// JSON so that an int literal compares equal to the int64 in a body and a
// []string to the []any there. nil is rejected: Kubernetes has no null
// values, so "nil" would be ambiguous between Absent and "anything".
func newCheck(v any) (Check, error) {
	switch t := v.(type) {
	case nil:
		return Check{}, fmt.Errorf("nil is not a filter value: use kopfgo.Present or kopfgo.Absent")
	case handlers.Marker:
		if t != handlers.Present && t != handlers.Absent {
			return Check{}, fmt.Errorf("unknown marker %d: use kopfgo.Present or kopfgo.Absent", int(t))
		}
		return Check{marker: t}, nil
	case func(any) bool:
		if t == nil {
			return Check{}, fmt.Errorf("the value callback is nil")
		}
		return Check{fn: t}, nil
	}
	if reflect.TypeOf(v).Kind() == reflect.Func {
		return Check{}, fmt.Errorf("a value callback must be a func(any) bool (the value is nil when absent); got %T", v)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return Check{}, fmt.Errorf("the value %v cannot be compared with object fields: %w", v, err)
	}
	var norm any
	if err := json.Unmarshal(raw, &norm); err != nil {
		return Check{}, fmt.Errorf("the value %v cannot be compared with object fields: %w", v, err)
	}
	return Check{value: norm}, nil
}

// Matches reports whether a value passes the check; present says whether the
// value exists at all.
func (c Check) Matches(v any, present bool) bool {
	switch {
	case c.marker == handlers.Present:
		return present
	case c.marker == handlers.Absent:
		return !present
	case c.fn != nil:
		if !present {
			v = nil
		}
		return c.fn(v)
	default:
		return present && equal(c.value, v)
	}
}

// Describe tells what the check is, for those that must say it elsewhere
// (a webhook's objectSelector): a marker, or an exact value (exact true),
// or neither for a callback.
func (c Check) Describe() (marker handlers.Marker, value any, exact bool) {
	return c.marker, c.value, c.marker == 0 && c.fn == nil
}

// MetaCheck is a check of one label or annotation.
type MetaCheck struct {
	Key   string
	Check Check
}

// Filters restrict a handler to the objects and changes they match. All of
// them must match (compat: filters-all-kinds). They are checked in Kopf's order, cheapest
// first and the callbacks last: labels, annotations, field values, field
// changes, When.
type Filters struct {
	Labels      []MetaCheck
	Annotations []MetaCheck
	// Field is the Field option as written; registration parses it into
	// Handler.Field, which also serves On.Field.
	Field string
	// Value checks the field's value; nil means Present (a field filter
	// without a value requires the field to exist).
	Value *Check
	// Old and New check the field before and after an update separately
	// (the OldValue and NewValue options).
	Old, New *Check
	// When sees the object; WhenChange sees the whole change.
	When       []func(*handlers.Object) bool
	WhenChange []func(*handlers.Change) bool

	errs []error
}

// AddLabels adds label checks; a bad value is a registration error.
func (f *Filters) AddLabels(m map[string]any) { f.Labels = f.addMeta(f.Labels, "label", m) }

// AddAnnotations adds annotation checks; a bad value is a registration error.
func (f *Filters) AddAnnotations(m map[string]any) {
	f.Annotations = f.addMeta(f.Annotations, "annotation", m)
}

func (f *Filters) addMeta(list []MetaCheck, what string, m map[string]any) []MetaCheck {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the same checks in the same order on every run
	for _, k := range keys {
		v := m[k]
		if _, ok := v.(string); !ok {
			switch v.(type) {
			case handlers.Marker, func(any) bool:
			default:
				if v == nil {
					f.errs = append(f.errs, fmt.Errorf("%s filter %q: nil is not a filter value; use kopfgo.Present or kopfgo.Absent", what, k))
				} else {
					f.errs = append(f.errs, fmt.Errorf("%s filter %q: want a string, kopfgo.Present, kopfgo.Absent or a func(any) bool; got %T", what, k, v))
				}
				continue
			}
		}
		c, err := newCheck(v)
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("%s filter %q: %w", what, k, err))
			continue
		}
		list = append(list, MetaCheck{Key: k, Check: c})
	}
	return list
}

// SetField sets the field of the field filters.
func (f *Filters) SetField(path string) {
	if f.Field != "" && f.Field != path {
		f.errs = append(f.errs, fmt.Errorf("two field filters (%q and %q): a handler has one field; register it twice instead", f.Field, path))
	}
	f.Field = path
}

// SetValue, SetOld and SetNew set the field's value checks.
func (f *Filters) SetValue(v any) { f.Value = f.check("Value", v) }

func (f *Filters) SetOld(v any) { f.Old = f.check("Old", v) }

func (f *Filters) SetNew(v any) { f.New = f.check("New", v) }

func (f *Filters) check(what string, v any) *Check {
	c, err := newCheck(v)
	if err != nil {
		f.errs = append(f.errs, fmt.Errorf("%s filter: %w", what, err))
		return nil
	}
	return &c
}

// AddWhen adds an object callback; AddWhenChange adds a change callback.
func (f *Filters) AddWhen(fn func(*handlers.Object) bool) {
	if fn == nil {
		f.errs = append(f.errs, fmt.Errorf("the When callback is nil"))
		return
	}
	f.When = append(f.When, fn)
}

func (f *Filters) AddWhenChange(fn func(*handlers.Change) bool) {
	if fn == nil {
		f.errs = append(f.errs, fmt.Errorf("the WhenChange callback is nil"))
		return
	}
	f.WhenChange = append(f.WhenChange, fn)
}

// Validate returns the problems found while the options were applied and
// the invalid combinations, joined; see validate.
func (f *Filters) Validate(hasField, update bool) error {
	return errors.Join(f.validate(hasField, update)...)
}

// validate returns the problems found while the options were applied and
// the invalid combinations (compat: filters-old-new, filters-errors). hasField says whether the
// handler has a field (from the Field option or On.Field); update says
// whether it serves updates, the only cause with an old and a new state.
func (f *Filters) validate(hasField, update bool) []error {
	errs := append([]error(nil), f.errs...)
	hasValue := f.Value != nil
	hasOldNew := f.Old != nil || f.New != nil
	if hasValue && hasOldNew {
		errs = append(errs, fmt.Errorf("either kopfgo.Value or kopfgo.OldValue/NewValue can be given, not both: Value matches the old or the new value, OldValue and NewValue each one side"))
	}
	if (hasValue || hasOldNew) && !hasField {
		errs = append(errs, fmt.Errorf("the Value, OldValue and NewValue filters need a field: add kopfgo.Field(\"spec.something\")"))
	}
	if hasOldNew && !update {
		errs = append(errs, fmt.Errorf("the OldValue and NewValue filters can only be used in update and field handlers, which see a change"))
	}
	return errs
}

// Cause is what filters and handlers look at in one pass over an object:
// the object, and for resource-changing handlers the change being handled.
// The callbacks' arguments are built on first use and shared by all
// handlers of the pass (compat: filters-all-kinds); callbacks must not modify them.
type Cause struct {
	// Reason is the change being handled; empty for handlers that see one
	// state only (event handlers, indexers, daemons, timers).
	Reason  causes.Reason
	Initial bool // first seen in the initial listing and not yet handled once
	Body    map[string]any
	// Old and New are the essences before and after the change; Old is nil
	// for an object never handled.
	Old, New map[string]any
	Diff     Diff
	Resource resources.Resource
	Patch    *patch.Patch
	Logger   *slog.Logger
	Memo     *handlers.Memo
	// Handling chooses Kopf's code or its manual where they disagree
	// (field handlers on creation, field filters of a missing old state).
	Handling config.Handling

	obj *handlers.Object
	chg *handlers.Change
}

// Object returns the object part of handler arguments, built on first use.
func (c *Cause) Object() *handlers.Object {
	if c.obj == nil {
		o := handlers.NewObject(c.Body, c.Resource, c.Patch, c.Logger)
		o.Memo = c.Memo
		c.obj = &o
	}
	return c.obj
}

func (c *Cause) change() *handlers.Change {
	if c.chg == nil {
		ch := &handlers.Change{Object: *c.Object(), Reason: c.Reason, Diff: c.Diff}
		if c.Old != nil {
			ch.Old = c.Old // a nil map in an interface would not be nil
		}
		if c.New != nil {
			ch.New = c.New
		}
		c.chg = ch
	}
	return c.chg
}

// MatchesObject reports whether the handler's filters match an object seen
// in one state: for event handlers, indexers, daemons and timers, the field
// filters check the current body (compat: filters-field).
func (h *Handler) MatchesObject(c *Cause) bool {
	f := &h.Filters
	if !matchMeta(f.Labels, c.Body, "labels") || !matchMeta(f.Annotations, c.Body, "annotations") {
		return false
	}
	if len(h.Field) > 0 {
		v, ok := dicts.Get(c.Body, h.Field)
		if !valueMatches(f.Value, v, ok) {
			return false
		}
	}
	return h.matchesCallbacks(c)
}

// prematches is Kopf's prematch: whether the object is in the handler's
// scope at all, whatever the cause. Field changes are not considered: an
// object stays in scope while its field is unchanged (compat: filters-stealth).
func (h *Handler) prematches(c *Cause) bool {
	f := &h.Filters
	if !matchMeta(f.Labels, c.Body, "labels") || !matchMeta(f.Annotations, c.Body, "annotations") {
		return false
	}
	if len(h.Field) > 0 && !h.matchesFieldValues(c) {
		return false
	}
	return h.matchesCallbacks(c)
}

// matches is prematches plus the field change that update and field
// handlers need (compat: filters-field-change, filters-old-new).
func (h *Handler) matches(c *Cause) bool {
	f := &h.Filters
	if !matchMeta(f.Labels, c.Body, "labels") || !matchMeta(f.Annotations, c.Body, "annotations") {
		return false
	}
	if len(h.Field) > 0 {
		if !h.matchesFieldValues(c) {
			return false
		}
		if (h.Reason == causes.Update || h.AnyCause) && !h.matchesFieldChange(c) {
			return false
		}
	}
	return h.matchesCallbacks(c)
}

// matchesFieldValues checks the field's value in the states the cause has:
// the new essence and the old one. As in Kopf's code, the missing old
// essence of an object never handled counts as a state without the field,
// so that Absent matches every creation; with
// Settings.Handling.FieldFiltersOnExistingStates, only the states that
// exist are checked, as the manual describes.
func (h *Handler) matchesFieldValues(c *Cause) bool {
	if c.New != nil {
		v, ok := dicts.Get(c.New, h.Field)
		if valueMatches(h.Filters.Value, v, ok) {
			return true
		}
	}
	if c.Old != nil {
		v, ok := dicts.Get(c.Old, h.Field)
		if valueMatches(h.Filters.Value, v, ok) {
			return true
		}
	} else if c.Reason != "" && !c.Handling.FieldFiltersOnExistingStates {
		return valueMatches(h.Filters.Value, nil, false)
	}
	return false
}

// matchesFieldChange requires the field to change (its presence included)
// and checks each side with OldValue and NewValue.
func (h *Handler) matchesFieldChange(c *Cause) bool {
	oldV, oldOK := getPath(c.Old, h.Field)
	newV, newOK := getPath(c.New, h.Field)
	if oldOK == newOK && (!oldOK || equal(oldV, newV)) {
		return false
	}
	f := &h.Filters
	if f.Old != nil && !f.Old.Matches(oldV, oldOK) {
		return false
	}
	if f.New != nil && !f.New.Matches(newV, newOK) {
		return false
	}
	return true
}

func (h *Handler) matchesCallbacks(c *Cause) bool {
	for _, fn := range h.Filters.When {
		if !fn(c.Object()) {
			return false
		}
	}
	for _, fn := range h.Filters.WhenChange {
		if !fn(c.change()) {
			return false
		}
	}
	return true
}

// valueMatches applies an optional value check; no check means Present.
func valueMatches(c *Check, v any, present bool) bool {
	if c == nil {
		return present
	}
	return c.Matches(v, present)
}

func matchMeta(checks []MetaCheck, body map[string]any, stanza string) bool {
	if len(checks) == 0 {
		return true
	}
	m := dicts.Map(body, "metadata", stanza)
	for _, mc := range checks {
		v, ok := m[mc.Key]
		if !mc.Check.Matches(v, ok) {
			return false
		}
	}
	return true
}

// Select returns the handlers to run for a cause, in registration order,
// deduplicated by function and id (compat: handlers-dedup), among those whose filters match
// (compat: filters-all-kinds). Field handlers run on every cause that changes their field, a
// creation with the field set included, as in Kopf's code (the manual says
// updates; Handling.FieldHandlersOnUpdatesOnly). Resume handlers join
// an update or deletion of an object first seen in the initial listing
// (compat: handlers-resume, handlers-resume-deleted).
func Select(hs []*Handler, c *Cause) []*Handler {
	var out []*Handler
	type key struct {
		fn uintptr
		id string
	}
	seen := map[key]bool{}
	for _, h := range hs {
		if !selected(h, c) || !h.matches(c) {
			continue
		}
		k := key{h.fnPtr, h.ID}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, h)
	}
	return out
}

// selected applies the reason rules; the field's change is one of the
// filters (matches).
func selected(h *Handler, c *Cause) bool {
	reason, initial := c.Reason, c.Initial
	if h.AnyCause && !c.Handling.FieldHandlersOnUpdatesOnly {
		switch reason {
		case causes.Create, causes.Update, causes.Resume, causes.Delete:
			return true
		}
	}
	switch h.Reason {
	case causes.Resume:
		switch reason {
		case causes.Resume:
			return true
		case causes.Update:
			return initial
		case causes.Delete:
			return initial && h.Deleted
		}
		return false
	default:
		return h.Reason == reason
	}
}

// Prematch reports whether any of the handlers has the object in scope. An
// object that none has is handled in stealth mode: the operator stores
// nothing on it and logs nothing about it (compat: filters-stealth).
func Prematch(hs []*Handler, c *Cause) bool {
	for _, h := range hs {
		if h.prematches(c) {
			return true
		}
	}
	return false
}

// RequiresFinalizer reports whether objects this handler matches must carry
// the finalizer: a non-optional delete handler cannot run if the object is
// gone before the operator sees its deletion (compat: handlers-delete, handlers-delete-optional).
func (h *Handler) RequiresFinalizer() bool {
	return h.Reason == causes.Delete && !h.Optional
}

// RequiresFinalizerFor reports whether a non-optional delete handler has
// the object in scope, so that its deletion must wait (compat: persistence-finalizer).
func RequiresFinalizerFor(hs []*Handler, c *Cause) bool {
	for _, h := range hs {
		if h.RequiresFinalizer() && h.prematches(c) {
			return true
		}
	}
	return false
}
