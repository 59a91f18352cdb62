package handlers

import (
	"context"
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
