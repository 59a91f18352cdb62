package handling

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/handlers"
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
	admissions []*AdmissionHandler
	errs       []error
	// ids are the ids taken, by the group that shares their namespace, with
	// the description of the handler that took each (registration.go).
	ids map[idKey]string
}

// Registration is what the public API hands over for one changing handler.
// Field is the dotted path for field handlers.
type Registration struct {
	Resource string
	Reason   causes.Reason
	Field    string
	IsField  bool
	Fn       handlers.ChangeFunc
	// Named is the user's function when Fn adapts it (typed handlers): the
	// handler is named, and deduplicated, after it. Nil: Fn.
	Named any
	// Configure applies the options; an ID it sets is the explicit id.
	Configure func(*Handler)
}

// AddChanging validates and records a changing handler.
func (r *Registry) AddChanging(reg Registration) {
	h := &Handler{Reason: reg.Reason, Fn: reg.Fn, AnyCause: reg.IsField}
	if reg.Configure != nil {
		reg.Configure(h)
	}
	call := "On." + titleCase(string(reg.Reason))
	if reg.IsField {
		call = "On.Field"
	}
	what, errs := h.validate(registration{
		call: fmt.Sprintf("%s(%q)", call, reg.Resource), noun: "handler", fn: adaptedFrom(reg.Fn, reg.Named),
		resource: reg.Resource, scoped: true, field: reg.Field, isField: reg.IsField,
		update:   reg.Reason == causes.Update,
		optional: reg.Reason == causes.Delete, deleted: reg.Reason == causes.Resume,
	})
	// The same function may serve several causes (deduplicated at run).
	if r.record("changing "+string(reg.Reason), h.Selector, what, h, errs) == nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.changing = append(r.changing, h)
	}
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
