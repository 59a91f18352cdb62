// Package subhandlers handles each item of spec.items as a sub-handler of
// the creation handler: each item gets its own progress, retries and
// result, and an item handled once is never handled again in the cycle.
// Run:
//
//	kopfgo run ./examples/07-subhandlers
package subhandlers

import (
	"context"
	"fmt"

	"github.com/kopfgo/kopfgo"
)

func Register(r kopfgo.Registrar) {
	r.Create("kopfexamples", createFn, kopfgo.ID("create_fn"))
}

func createFn(ctx context.Context, c *kopfgo.Change) (any, error) {
	items, _ := c.Spec["items"].([]any)
	for _, item := range items {
		item := fmt.Sprint(item)
		// Declared on every invocation of createFn: the parent is invoked
		// again until all its sub-handlers are done, so it must only
		// declare them, with no side effects of its own.
		err := kopfgo.Subhandler(ctx, func(ctx context.Context, c *kopfgo.Change) (any, error) {
			c.Logger.Info(fmt.Sprintf("=== Handling creation for %s. ===", item))
			return nil, nil
		}, kopfgo.ID(item))
		if err != nil {
			return nil, err
		}
	}
	return nil, nil
}
