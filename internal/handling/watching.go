package handling

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// EventHandler is one registered event handler. Event handlers keep no
// progress: no retries, no annotations; every event calls them again. It
// embeds Handler for the options every kind shares; only the id, param and
// filters apply, and Handler.Fn is unused.
type EventHandler struct {
	Handler
	Fn handlers.EventFunc
}

// spec is the Handler used to check the filters and to carry the options.
func (e *EventHandler) spec() *Handler { return &e.Handler }

// EventRegistration is what the public API hands over for an event handler.
type EventRegistration struct {
	Resource string
	Fn       handlers.EventFunc
	// Named is the user's function when Fn adapts it (typed event
	// handlers), as in Registration. Nil: Fn.
	Named     any
	Configure func(*Handler)
}

// AddEvent validates and records an event handler.
func (r *Registry) AddEvent(reg EventRegistration) {
	e := &EventHandler{Fn: reg.Fn}
	if reg.Configure != nil {
		reg.Configure(&e.Handler)
	}
	what, errs := e.validate(registration{
		call: fmt.Sprintf("On.Event(%q)", reg.Resource), noun: "handler", fn: adaptedFrom(reg.Fn, reg.Named),
		resource: reg.Resource, scoped: true,
	})
	if r.record("event", e.Selector, what, &e.Handler, errs) == nil {
		r.mu.Lock()
		defer r.mu.Unlock()
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
// kept to retry them with (compat: handlers-event).
//
// observe, when set, is told of each handler's call: its error (nil on
// success) and how long it ran, for the metrics.
func HandleEvent(ctx context.Context, hs []*EventHandler, typ handlers.EventType, c *Cause, observe func(id string, err error, d time.Duration)) {
	type key struct {
		fn uintptr
		id string
	}
	seen := map[key]bool{}
	var rawType any
	if typ != handlers.EventListed {
		rawType = string(typ)
	}
	for _, h := range hs {
		k := key{h.fnPtr, h.ID}
		if seen[k] || !h.spec().MatchesObject(c) {
			continue
		}
		seen[k] = true
		arg := &handlers.WatchEvent{
			Object: *c.Object(), Type: typ,
			Raw: map[string]any{"type": rawType, "object": c.Body},
		}
		arg.Param = h.Param
		var (
			result any
			err    error
		)
		c.Logger.Debug(fmt.Sprintf("Handler '%s' is invoked.", h.ID))
		start := time.Now()
		result, err = safeEvent(ctx, h.Fn, arg)
		if observe != nil {
			observe(h.ID, err, time.Since(start))
		}
		var (
			temp *handlers.TemporaryError
			pnc  *handlers.PanicError
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
		case errors.Is(err, &handlers.PermanentError{}):
			c.Logger.Error(fmt.Sprintf("Handler '%s' failed permanently: %s", h.ID, err))
		default:
			if errors.As(err, &pnc) {
				c.Logger.Debug(fmt.Sprintf("Handler '%s' panicked at:\n%s", h.ID, pnc.Stack))
			}
			c.Logger.Error(fmt.Sprintf("Handler '%s' failed with an exception and will ignore it: %s", h.ID, err))
		}
	}
}

func safeEvent(ctx context.Context, fn handlers.EventFunc, arg *handlers.WatchEvent) (result any, err error) {
	defer func() {
		if v := recover(); v != nil {
			result, err = nil, &handlers.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(ctx, arg)
}
