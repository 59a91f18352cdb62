package handlers

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// EventType is the type of a watch event, as Kopf names it.
type EventType string

const (
	// EventListed is an object of the initial listing, seen before the watch
	// stream begins; Kopf's None.
	EventListed   EventType = ""
	EventAdded    EventType = "ADDED"
	EventModified EventType = "MODIFIED"
	EventDeleted  EventType = "DELETED"
)

// WatchEvent is the argument of event handlers: one raw event of the watch
// stream (compat: handlers-event). Body is the object as the event carried it; for DELETED,
// its last state. (Kopf's "event-watching handlers"; kopfgo.Event posts
// Kubernetes events, a different thing.)
type WatchEvent struct {
	Object
	Type EventType
	// Raw is the event as Kopf's `event` kwarg has it: {"type": nil for the
	// initial listing or the type, "object": the body}.
	Raw map[string]any
}

// EventFunc is an event handler. A non-nil result is stored at
// status.<handler-id> and Patch is applied, as in Kopf, except for DELETED
// events, whose object is gone; errors are logged and ignored.
type EventFunc func(ctx context.Context, e *WatchEvent) (any, error)

// EventHandler is one registered event handler. Event handlers keep no
// progress: no retries, no annotations; every event calls them again.
type EventHandler struct {
	ID       string
	Fn       EventFunc
	Selector resources.Selector
	Resource string
	Field    []string
	Param    any
	Filters  Filters
	FuncName string
	fnPtr    uintptr
}

// spec is the Handler used to check the filters and to carry the options.
func (e *EventHandler) spec() *Handler {
	return &Handler{ID: e.ID, Field: e.Field, Filters: e.Filters}
}

// EventRegistration is what the public API hands over for an event handler.
type EventRegistration struct {
	Resource  string
	Fn        EventFunc
	Configure func(*Handler)
}

// AddEvent validates and records an event handler. Its options arrive on a
// Handler, as for every kind; only the id, param and filters apply.
func (r *Registry) AddEvent(reg EventRegistration) {
	h := &Handler{}
	if reg.Configure != nil {
		reg.Configure(h)
	}
	full, derived := FuncName(reg.Fn)
	what := fmt.Sprintf("On.Event(%q) handler %s", reg.Resource, full)
	if h.ID != "" {
		what = fmt.Sprintf("On.Event(%q) handler %q (%s)", reg.Resource, h.ID, full)
	}
	var errs []error
	id := h.ID
	switch {
	case reg.Fn == nil:
		errs = append(errs, fmt.Errorf("%s: the handler function is nil", what))
	case id == "":
		id = derived
		if id == "" {
			errs = append(errs, fmt.Errorf("%s: a closure or function literal has no stable name; give it kopfgo.ID(\"...\")", what))
		}
	}
	var field []string
	if h.Filters.Field != "" {
		path, err := dicts.ParsePath(h.Filters.Field)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
		field = path
		if id != "" && len(path) > 0 {
			id += "/" + strings.Join(path, ".")
		}
	}
	for _, err := range h.Filters.validate(len(field) > 0, false) {
		errs = append(errs, fmt.Errorf("%s: %w", what, err))
	}
	sel, err := resources.Parse(reg.Resource)
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", what, err))
	}
	e := &EventHandler{
		ID: id, Fn: reg.Fn, Selector: sel, Resource: reg.Resource, Field: field,
		Param: h.Param, Filters: h.Filters, FuncName: full, fnPtr: funcPtr(reg.Fn),
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(errs) == 0 {
		for _, o := range r.events {
			if o.ID == e.ID && o.Selector == e.Selector {
				errs = append(errs, fmt.Errorf("%s: duplicate handler id %q (also %s); give one of them another kopfgo.ID", what, e.ID, o.FuncName))
				break
			}
		}
	}
	for _, err := range errs {
		r.errs = append(r.errs, fmt.Errorf("%w: %w", ErrRegistration, err))
	}
	if len(errs) == 0 {
		r.events = append(r.events, e)
	}
}

// Events returns the event handlers in registration order.
func (r *Registry) Events() []*EventHandler {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*EventHandler(nil), r.events...)
}

// EventsFor returns the event handlers whose selectors match the resource.
func EventsFor(all []*EventHandler, res resources.Resource) []*EventHandler {
	var out []*EventHandler
	for _, h := range all {
		if h.Selector.Matches(res) {
			out = append(out, h)
		}
	}
	return out
}

// HandleEvent invokes the event handlers whose filters match, one after
// another in registration order, deduplicated by function and id. Results
// go into c.Patch; errors are logged and otherwise ignored, since nothing is
// kept to retry them with (compat: handlers-event). invoke wraps each call (nil: call
// directly), as Cycle.Invoke does.
func HandleEvent(ctx context.Context, hs []*EventHandler, typ EventType, c *Cause, invoke func(context.Context, func())) {
	type key struct {
		fn uintptr
		id string
	}
	seen := map[key]bool{}
	var rawType any
	if typ != EventListed {
		rawType = string(typ)
	}
	for _, h := range hs {
		k := key{h.fnPtr, h.ID}
		if seen[k] || !h.spec().MatchesObject(c) {
			continue
		}
		seen[k] = true
		arg := &WatchEvent{
			Object: *c.Object(), Type: typ,
			Raw: map[string]any{"type": rawType, "object": c.Body},
		}
		arg.Param = h.Param
		var (
			result any
			err    error
		)
		c.Logger.Debug(fmt.Sprintf("Handler '%s' is invoked.", h.ID))
		call := func() { result, err = safeEvent(ctx, h.Fn, arg) }
		if invoke != nil {
			invoke(ctx, call)
		} else {
			call()
		}
		var (
			temp *TemporaryError
			pnc  *PanicError
		)
		switch {
		case err == nil:
			if result != nil {
				if err := deliver(c.Patch, h.ID, result); err != nil {
					c.Logger.Error(fmt.Sprintf("Handler '%s' returned a result that cannot be stored in status: %v", h.ID, err))
					continue
				}
			}
			c.Logger.Info(fmt.Sprintf("Handler '%s' succeeded.", h.ID))
		case errors.As(err, &temp):
			c.Logger.Error(fmt.Sprintf("Handler '%s' failed temporarily: %s", h.ID, err))
		case errors.Is(err, &PermanentError{}):
			c.Logger.Error(fmt.Sprintf("Handler '%s' failed permanently: %s", h.ID, err))
		default:
			if errors.As(err, &pnc) {
				c.Logger.Debug(fmt.Sprintf("Handler '%s' panicked at:\n%s", h.ID, pnc.Stack))
			}
			c.Logger.Error(fmt.Sprintf("Handler '%s' failed with an exception and will ignore it: %s", h.ID, err))
		}
	}
}

func safeEvent(ctx context.Context, fn EventFunc, arg *WatchEvent) (result any, err error) {
	defer func() {
		if v := recover(); v != nil {
			result, err = nil, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(ctx, arg)
}
