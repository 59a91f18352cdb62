// Package exceptions shows how errors are handled: a TemporaryError retries
// after its delay, any other error after the handler's backoff, and a
// PermanentError stops the retries. Run:
//
//	kopfgo run ./examples/03-exceptions
package exceptions

import (
	"context"
	"errors"
	"time"

	"github.com/kopfgo/kopfgo"
)

func init() {
	kopfgo.On.Create("kopfexamples", createFn, kopfgo.ID("create_fn"), kopfgo.Backoff(time.Second))
}

// MyError is an arbitrary error, retried after the handler's backoff.
var MyError = errors.New("Second failure.")

func createFn(ctx context.Context, c *kopfgo.Change) (any, error) {
	switch c.Retry {
	case 0:
		return nil, kopfgo.TemporaryMsg("First failure.", time.Second)
	case 1:
		return nil, MyError
	default:
		return nil, kopfgo.PermanentMsg("Third failure, the final one.")
	}
}
