package kopfgo

import (
	"context"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
)

// ErrSubhandlersPending is what Execute returns while sub-handlers remain
// unfinished; return it from the parent handler.
var ErrSubhandlersPending = handlers.ErrSubhandlersPending

// ErrNoParentHandler is returned by Execute and Subhandler outside of a
// resource-changing handler.
var ErrNoParentHandler = handlers.ErrNoParentHandler

// Execute runs sub-handlers of the current resource-changing handler (the
// manual's "Sub-handlers" and "Idempotence"; compat: handlers-subhandlers). Each key is a
// child's id, appended to the parent's: "create_fn/item1". Each child is a
// handler of its own: its progress is stored on the object
// (kopf.zalando.org/create_fn.item1), it is retried on errors, its result
// goes to status["create_fn/item1"], and once it has succeeded it is not
// invoked again in this cycle.
//
// One child runs per call. Until every child has finished, Execute returns
// ErrSubhandlersPending: return it, and the parent is invoked again when
// the next child is due, to declare its children again. So the parent must
// declare the same children every time and have no side effects of its
// own; its result is stored once, when all children are done:
//
//	func createFn(ctx context.Context, c *kopfgo.Change) (any, error) {
//		fns := map[string]kopfgo.ChangeFunc{}
//		for _, item := range items(c.Spec) {
//			fns[item] = func(ctx context.Context, c *kopfgo.Change) (any, error) {
//				return nil, createItem(ctx, item)
//			}
//		}
//		if err := kopfgo.Execute(ctx, fns); err != nil {
//			return nil, err
//		}
//		return map[string]any{"items": len(fns)}, nil
//	}
//
// A child that fails permanently counts as finished, as in Kopf: the parent
// goes on. Keys run in sorted order when several are due (Go maps have no
// order). With nil fns, Execute runs the children declared with Subhandler.
func Execute(ctx context.Context, fns map[string]ChangeFunc) error {
	return handling.Execute(ctx, fns)
}

// Subhandler declares a sub-handler of the current resource-changing handler,
// with the options of a handler: ID (required for closures, and appended to the
// parent's id), Retries, Backoff, Timeout, Errors, Param, and filters (OldValue
// and NewValue only under update and field handlers). The declared children run
// after the parent returns without error, unless it called Execute(ctx, nil)
// itself; the rules of Execute apply (compat: handlers-subhandlers). A mistake
// in the declaration is returned at once.
func Subhandler(ctx context.Context, fn ChangeFunc, opts ...ChangeOption) error {
	return handling.Register(ctx, fn, changeConfig(opts))
}
