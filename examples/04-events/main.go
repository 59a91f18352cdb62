// Package events posts custom Kubernetes Events about the handled object.
// Run:
//
//	kopfgo run ./examples/04-events
package events

import (
	"context"
	"errors"

	"github.com/kopfgo/kopfgo"
)

func Register(r kopfgo.Registrar) {
	r.Create("kopfexamples", createFn, kopfgo.ID("create_fn"))
}

func createFn(ctx context.Context, c *kopfgo.Change) (any, error) {
	// The all-purpose function for the event creation.
	if err := kopfgo.Event(ctx, c, "SomeType", "SomeReason", "Some message"); err != nil {
		return nil, err
	}

	// The shortcuts for the conventional events and common cases.
	if err := kopfgo.Info(ctx, c, "SomeReason", "Some message"); err != nil {
		return nil, err
	}
	if err := kopfgo.Warn(ctx, c, "SomeReason", "Some message"); err != nil {
		return nil, err
	}

	// An error as an event: the message becomes "Some exception: Exception text.".
	err := errors.New("Exception text.")
	return nil, kopfgo.Exception(ctx, c, "SomeReason", "Some exception:", err)
}
