// Package minimal is the smallest kopfgo operator: one creation handler whose
// result becomes the object's status. Run it with:
//
//	kopfgo run ./examples/01-minimal
package minimal

import (
	"context"
	"fmt"

	"github.com/kopfgo/kopfgo"
)

func Register(r kopfgo.Registrar) {
	r.Create("kopfexamples", createFn, kopfgo.ID("create_fn"))
}

func createFn(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info(fmt.Sprintf("And here we are! Creating: %v", c.Spec))
	return map[string]any{"message": "hello world"}, nil // goes to status.create_fn
}
