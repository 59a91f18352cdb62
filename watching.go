package kopfgo

import (
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
)

// WatchEvent is the argument of event handlers: one raw event of the watch
// stream, with its Type, the object as the event carried it, and Raw, the
// event as Kopf's `event` kwarg has it.
type WatchEvent = handlers.WatchEvent

// EventFunc is an event handler. Errors are logged and ignored: event
// handlers keep no progress and are never retried. A non-nil result goes to
// status.<handler-id> and Patch is applied, except after DELETED.
type EventFunc = handlers.EventFunc

// EventType is the type of a watch event.
type EventType = handlers.EventType

// The event types. EventListed ("") marks the objects of the initial
// listing, seen when the operator starts, before the watch stream begins
// (Kopf's None); objects added later come as EventAdded. A watch that
// re-lists after an expired resource version reports the objects it finds
// as EventModified (and EventAdded, EventDeleted for the differences).
const (
	EventListed   = handlers.EventListed
	EventAdded    = handlers.EventAdded
	EventModified = handlers.EventModified
	EventDeleted  = handlers.EventDeleted
)

// Event registers a handler for every watch event of the resource's objects,
// the initial listing included (compat: handlers-event, handlers-event-relist).
// Nothing is stored on the objects for it: no progress, no retries, no
// diff-base; it must be idempotent, since it runs again for every object
// whenever the operator starts. Filters that check a field check the object as
// the event has it.
//
// It takes FilterOptions only: ID, Param and the filters.
func (r Registrar) Event(resource string, fn EventFunc, opts ...FilterOption) {
	r.event(resource, fn, nil, opts)
}

// event registers fn, or the typed function named that fn adapts.
func (r Registrar) event(resource string, fn EventFunc, named any, opts []FilterOption) {
	r.op.reg.AddEvent(handling.EventRegistration{Resource: resource, Fn: fn, Named: named, Configure: func(h *handling.Handler) {
		for _, o := range opts {
			o.applyEvent(h)
		}
	}})
}
