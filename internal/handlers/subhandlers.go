package handlers

import (
	"errors"
)

// ErrSubhandlersPending is what kopfgo.Execute returns while children remain
// unfinished: return it from the parent handler. The parent is invoked again
// when the next child is due. The framework knows of the pending children
// even if the error is dropped, so the parent is never taken as finished
// early.
var ErrSubhandlersPending = errors.New("sub-handlers are not finished yet; the handler will be invoked again")

// ErrNoParentHandler marks kopfgo.Execute and kopfgo.Subhandler called outside of a
// resource-changing handler: sub-handlers need the progress on the object
// that only those handlers have (Kopf refuses them in event handlers too).
var ErrNoParentHandler = errors.New("sub-handlers can only be declared inside create, update, delete, resume and field handlers")
