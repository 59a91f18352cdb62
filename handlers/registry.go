package handlers

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/kopfgo/kopfgo/causes"
	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// Registry collects handlers. Registration never fails on the spot: problems
// are recorded and returned together by Err, so that Run can report every
// mistake, each naming its handler, before anything starts.
type Registry struct {
	mu         sync.Mutex
	changing   []*Handler
	events     []*EventHandler
	activities []*ActivityHandler
	spawning   []*Spawning
	errs       []error
}

// Registration is what the public API hands over for one changing handler.
// Field is the dotted path for field handlers.
type Registration struct {
	Resource string
	Reason   causes.Reason
	Field    string
	IsField  bool
	Fn       ChangeFunc
	// Configure applies the options; an ID it sets is the explicit id.
	Configure func(*Handler)
}

// AddChanging validates and records a changing handler.
func (r *Registry) AddChanging(reg Registration) {
	h := &Handler{Reason: reg.Reason, Fn: reg.Fn, Resource: reg.Resource, AnyCause: reg.IsField}
	if reg.Configure != nil {
		reg.Configure(h)
	}
	full, derived := FuncName(reg.Fn)
	h.FuncName = full
	h.fnPtr = funcPtr(reg.Fn)
	explicit := h.ID
	what := describe(reg, full, explicit)

	var errs []error
	if reg.Fn == nil {
		errs = append(errs, fmt.Errorf("%s: the handler function is nil", what))
	}
	id := explicit
	if id == "" {
		id = derived
		if id == "" && reg.Fn != nil {
			errs = append(errs, fmt.Errorf("%s: a closure or function literal has no stable name; give it kopfgo.ID(\"...\"), because the id keys the progress persisted on objects", what))
		}
	}
	field := reg.Field
	if !reg.IsField {
		field = h.Filters.Field
	} else if h.Filters.Field != "" {
		errs = append(errs, fmt.Errorf("%s: On.Field takes its field as an argument; remove the kopfgo.Field option", what))
	}
	if reg.IsField || field != "" {
		path, err := dicts.ParsePath(field)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
		h.Field = path
		if id != "" && len(path) > 0 {
			id += "/" + strings.Join(path, ".") // Kopf's suffix (compat: handlers-ids)
		}
	}
	for _, err := range h.Filters.validate(len(h.Field) > 0, h.Reason == causes.Update) {
		errs = append(errs, fmt.Errorf("%s: %w", what, err))
	}
	h.ID = id
	sel, err := resources.Parse(reg.Resource)
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", what, err))
	}
	h.Selector = sel
	if h.Retries < 0 {
		errs = append(errs, fmt.Errorf("%s: Retries must not be negative", what))
	}
	if h.Backoff < 0 || h.Timeout < 0 {
		errs = append(errs, fmt.Errorf("%s: Backoff and Timeout must not be negative", what))
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if len(errs) == 0 {
		for _, o := range r.changing {
			if o.ID == h.ID && o.Reason == h.Reason && o.Selector == h.Selector {
				errs = append(errs, fmt.Errorf("%s: duplicate handler id %q (also %s); give one of them another kopfgo.ID", what, h.ID, o.FuncName))
				break
			}
		}
	}
	for _, err := range errs {
		r.errs = append(r.errs, fmt.Errorf("%w: %w", ErrRegistration, err))
	}
	if len(errs) == 0 {
		r.changing = append(r.changing, h)
	}
}

// AddError records a registration problem found by a caller.
func (r *Registry) AddError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Errorf("%w: %w", ErrRegistration, err))
}

func describe(reg Registration, full, explicit string) string {
	kind := "On." + titleCase(string(reg.Reason))
	if reg.IsField {
		kind = "On.Field"
	}
	name := full
	if explicit != "" {
		name = fmt.Sprintf("%q (%s)", explicit, full)
	}
	if name == "" {
		name = "<nil>"
	}
	return fmt.Sprintf("%s(%q) handler %s", kind, reg.Resource, name)
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Err returns every registration error, joined, or nil.
func (r *Registry) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

// Changing returns the changing handlers in registration order.
func (r *Registry) Changing() []*Handler {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Handler(nil), r.changing...)
}

// Selectors returns the distinct selectors of all handlers, for discovery.
func (r *Registry) Selectors() []resources.Selector {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[resources.Selector]bool{}
	var out []resources.Selector
	for _, h := range r.changing {
		if !seen[h.Selector] {
			seen[h.Selector] = true
			out = append(out, h.Selector)
		}
	}
	for _, h := range r.events {
		if !seen[h.Selector] {
			seen[h.Selector] = true
			out = append(out, h.Selector)
		}
	}
	for _, s := range r.spawning {
		if !seen[s.Selector] {
			seen[s.Selector] = true
			out = append(out, s.Selector)
		}
	}
	return out
}

// Names returns the ids of the handlers of a selector, for messages.
func (r *Registry) Names(sel resources.Selector) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for _, h := range r.changing {
		if h.Selector == sel {
			names = append(names, h.ID)
		}
	}
	for _, h := range r.events {
		if h.Selector == sel {
			names = append(names, h.ID)
		}
	}
	for _, h := range r.spawning {
		if h.Selector == sel {
			names = append(names, h.ID)
		}
	}
	return names
}

// ForResource returns the handlers (changing ones, or daemons and timers)
// whose selectors match the resource.
func ForResource[H interface{ ServesResource(resources.Resource) bool }](all []H, res resources.Resource) []H {
	var out []H
	for _, h := range all {
		if h.ServesResource(res) {
			out = append(out, h)
		}
	}
	return out
}

// ServesResource reports whether the handler's selector matches res.
func (h *Handler) ServesResource(res resources.Resource) bool { return h.Selector.Matches(res) }

// RequiresFinalizer reports whether any of the handlers needs the finalizer.
func RequiresFinalizer(hs []*Handler) bool {
	for _, h := range hs {
		if h.RequiresFinalizer() {
			return true
		}
	}
	return false
}

// ExtraFields returns the field paths that handlers watch (On.Field, or a
// Field filter) outside the default essence, status or metadata.generation
// for instance, so that they enter the essence (compat: handlers-field-essence). spec and the labels
// are in the essence already.
func ExtraFields(hs []*Handler) [][]string {
	var out [][]string
	for _, h := range hs {
		switch {
		case len(h.Field) == 0, h.Field[0] == "spec":
		case h.Field[0] == "metadata" && len(h.Field) > 1 && h.Field[1] == "labels":
		default:
			out = append(out, h.Field)
		}
	}
	return out
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
