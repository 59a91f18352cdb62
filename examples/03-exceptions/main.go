// Package exceptions shows how errors are handled, with four creation
// handlers that fail in different ways: a PermanentError at once, a
// TemporaryError until the 4th attempt, an arbitrary error retried until its
// Retries run out, and an arbitrary error under ErrorsPermanent. Run:
//
//	kopfgo run ./examples/03-exceptions
package exceptions

import (
	"context"
	"time"

	"github.com/kopfgo/kopfgo"
)

func Register(r kopfgo.Registrar) {
	r.Create("kopfexamples", instantFailureWithOnlyAMessage,
		kopfgo.ID("instant_failure_with_only_a_message"))
	r.Create("kopfexamples", eventualSuccessWithAFewMessages,
		kopfgo.ID("eventual_success_with_a_few_messages"))
	r.Create("kopfexamples", eventualFailureWithTracebacks,
		kopfgo.ID("eventual_failure_with_tracebacks"), kopfgo.Retries(3), kopfgo.Backoff(time.Second))
	r.Create("kopfexamples", instantFailureWithTraceback,
		kopfgo.ID("instant_failure_with_traceback"), kopfgo.Errors(kopfgo.ErrorsPermanent), kopfgo.Backoff(time.Second))
}

// MyError is an arbitrary error: neither temporary nor permanent by itself,
// so the handler's errors mode decides (retried after the backoff by
// default). Go errors carry no traceback, unlike Kopf's exceptions: the log
// shows the error's message only.
type MyError struct{ msg string }

func (e *MyError) Error() string { return e.msg }

func instantFailureWithOnlyAMessage(ctx context.Context, c *kopfgo.Change) (any, error) {
	return nil, kopfgo.PermanentMsg("Fail once and for all.")
}

func eventualSuccessWithAFewMessages(ctx context.Context, c *kopfgo.Change) (any, error) {
	if c.Retry < 3 { // 0, 1, 2, 3
		return nil, kopfgo.TemporaryMsg("Expected recoverable error.", time.Second)
	}
	return nil, nil
}

func eventualFailureWithTracebacks(ctx context.Context, c *kopfgo.Change) (any, error) {
	return nil, &MyError{"An error that is supposed to be recoverable."}
}

func instantFailureWithTraceback(ctx context.Context, c *kopfgo.Change) (any, error) {
	return nil, &MyError{"An error that is supposed to be recoverable."}
}
