// Package events watches raw events: every event of every KopfExample, the
// initial listing included, with nothing stored on the objects. Run:
//
//	kopfgo run ./examples/08-events
package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/kopfgo/kopfgo"
)

func Register(r kopfgo.Registrar) {
	r.Event("kopf.dev/v1/kopfexamples", eventFnWithError, kopfgo.ID("event_fn_with_error"))
	r.Event("kopf.dev/v1/kopfexamples", normalEventFn, kopfgo.ID("normal_event_fn"))
}

// eventFnWithError fails on every event: the error is logged and ignored,
// since event handlers are never retried.
func eventFnWithError(ctx context.Context, e *kopfgo.WatchEvent) (any, error) {
	return nil, errors.New("Oops!")
}

func normalEventFn(ctx context.Context, e *kopfgo.WatchEvent) (any, error) {
	// The raw event as it came: {"object": {...}, "type": "ADDED"}, with
	// type null for the objects of the initial listing.
	raw, err := json.Marshal(e.Raw)
	if err != nil {
		return nil, err
	}
	e.Logger.Info(fmt.Sprintf("Event received: %s", raw))
	return nil, nil
}
