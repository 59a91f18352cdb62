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

func init() {
	kopfgo.On.Event("kopf.dev/v1/kopfexamples", eventFnWithError, kopfgo.ID("event_fn_with_error"))
	kopfgo.On.Event("kopf.dev/v1/kopfexamples", normalEventFn, kopfgo.ID("normal_event_fn"))
}

// eventFnWithError fails on every event: the error is logged and ignored,
// since event handlers are never retried.
func eventFnWithError(ctx context.Context, e *kopfgo.WatchEvent) (any, error) {
	return nil, errors.New("Oops!")
}

func normalEventFn(ctx context.Context, e *kopfgo.WatchEvent) (any, error) {
	raw, err := json.Marshal(map[string]any{"type": e.Raw["type"], "object": map[string]any{
		"name": e.Name, "resourceVersion": e.Meta["resourceVersion"], "spec": e.Spec,
	}})
	if err != nil {
		return nil, err
	}
	e.Logger.Info(fmt.Sprintf("Event received: %s", raw))
	return nil, nil
}
