package handling

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/patch"
)

// Verdict is what one attempt of a handler comes to under Kopf's rules for
// errors: success, a retry after a delay, or a permanent failure. The
// changing handlers' cycle persists it in a progress record; daemons and
// timers keep it in memory. Both log it the same way, so an error reads the
// same whichever kind of handler raised it.
type Verdict struct {
	// Done: no more attempts for this cause (or, for daemons and timers,
	// this run): the handler succeeded, its error is ignored, or it failed.
	Done bool
	// Failed: done with a permanent failure.
	Failed bool
	// Delay is, when not done, how long until the next attempt.
	Delay time.Duration
	// Message is what a progress record keeps: the error of a retried
	// attempt, the whole log line of a failure, "" on success.
	Message string
	// Err is, when Failed, the error the handler failed with: a
	// *HandlerTimeoutError or *RetriesExceededError when its Timeout or
	// Retries ended it (as Kopf raises them), else its own last error.
	Err error

	title string
	line  string
	level slog.Level
	stack []byte
}

// Log writes the verdict's line as Kopf words it: INFO on success, ERROR
// otherwise; a panic's stack goes to DEBUG.
func (v Verdict) Log(log *slog.Logger) {
	if v.stack != nil {
		log.Debug(fmt.Sprintf("%s panicked at:\n%s", v.title, v.stack))
	}
	log.Log(context.Background(), v.level, v.line)
}

// Title is how framework logs name a handler: "Handler 'create_fn'",
// "Daemon 'monitor'", "Timer 'ping'", as in Kopf.
func Title(kind, id string) string { return fmt.Sprintf("%s '%s'", kind, id) }

// Expired fails a handler before an attempt when its Timeout has passed
// since the first attempt or its Retries are used up; retries counts the
// attempts made so far.
func Expired(h *Handler, title string, retries int, runtime time.Duration) (Verdict, bool) {
	switch {
	case h.Timeout > 0 && runtime >= h.Timeout:
		line := fmt.Sprintf("%s has timed out after %s.", title, runtime.Round(time.Millisecond))
		return failure(title, line, line, nil, &handlers.HandlerTimeoutError{ID: h.ID, Timeout: h.Timeout, Runtime: runtime}), true
	case h.Retries > 0 && retries >= h.Retries:
		line := fmt.Sprintf("%s has exceeded %d retries.", title, h.Retries)
		return failure(title, line, line, nil, &handlers.RetriesExceededError{ID: h.ID, Retries: h.Retries}), true
	}
	return Verdict{}, false
}

// Judge classifies what an attempt returned. retries counts the attempts
// made, this one included; runtime is the time since the first attempt, as
// the handler saw it; defaultBackoff applies to arbitrary errors of handlers
// without their own Backoff. TemporaryError and PermanentError decide for
// themselves; other errors (panics included) follow the handler's errors
// mode. A retry that would exceed the handler's Timeout or Retries fails now
// rather than later.
func Judge(h *Handler, title string, err error, retries int, runtime, defaultBackoff time.Duration) Verdict {
	if err == nil {
		return Verdict{Done: true, title: title, line: title + " succeeded.", level: slog.LevelInfo}
	}
	var (
		temp  *handlers.TemporaryError
		pnc   *handlers.PanicError
		msg   = err.Error()
		stack []byte
	)
	if errors.As(err, &pnc) {
		stack = pnc.Stack
	}
	// Kopf words the timeout differently for the two kinds of errors:
	// "will time out after N seconds", "it would time out in N seconds".
	timeoutWord := "after"
	if !errors.As(err, &temp) {
		timeoutWord = "in"
	}
	// lookahead fails a retry that could not happen in time: it says what
	// would end it, and the error it ends with (err inside).
	lookahead := func(delay time.Duration) (string, error) {
		if h.Timeout > 0 && runtime+delay >= h.Timeout {
			return fmt.Sprintf("time out %s %s", timeoutWord, seconds(h.Timeout)), &handlers.HandlerTimeoutError{ID: h.ID, Timeout: h.Timeout, Runtime: runtime, Err: err}
		}
		if h.Retries > 0 && retries >= h.Retries {
			return fmt.Sprintf("exceed %d retries", h.Retries), &handlers.RetriesExceededError{ID: h.ID, Retries: h.Retries, Err: err}
		}
		return "", nil
	}
	retry := func(line string, delay time.Duration) Verdict {
		return Verdict{Delay: delay, Message: msg, title: title, line: line, level: slog.LevelError, stack: stack}
	}
	switch {
	case errors.As(err, &temp):
		if ahead, end := lookahead(temp.Delay); ahead != "" {
			line := fmt.Sprintf("%s failed temporarily but will %s: %s", title, ahead, msg)
			return failure(title, line, line, nil, end)
		}
		return retry(fmt.Sprintf("%s failed temporarily: %s", title, msg), temp.Delay)
	case errors.Is(err, &handlers.PermanentError{}):
		return failure(title, fmt.Sprintf("%s failed permanently: %s", title, msg), msg, nil, err)
	}
	switch h.Errors {
	case handlers.ErrorsIgnored:
		return Verdict{Done: true, title: title, line: fmt.Sprintf("%s failed with an exception and will ignore it: %s", title, msg), level: slog.LevelError, stack: stack}
	case handlers.ErrorsPermanent:
		return failure(title, fmt.Sprintf("%s failed with an exception and will stop now: %s", title, msg), msg, stack, err)
	}
	delay := h.Backoff
	if delay == 0 {
		delay = defaultBackoff
	}
	if ahead, end := lookahead(delay); ahead != "" {
		line := fmt.Sprintf("%s failed with an exception and will stop now (it would %s on the next attempt): %s", title, ahead, msg)
		return failure(title, line, line, stack, end)
	}
	return retry(fmt.Sprintf("%s failed with an exception and will try again in %s: %s", title, seconds(delay), msg), delay)
}

// failure is a final failure logged as line; message is what the progress
// record keeps, as Kopf keeps str() of the outcome's exception: the error's
// own text for a permanent error, the whole line where Kopf wraps it in its
// timeout or retries error; err is the error it ends with (Verdict.Err).
func failure(title, line, message string, stack []byte, err error) Verdict {
	return Verdict{Done: true, Failed: true, Message: message, Err: err, title: title, line: line, level: slog.LevelError, stack: stack}
}

// DeliverResult puts a handler's result at status.<id> in p: a map merges
// into what is there, anything else replaces it (compat: handlers-results).
func DeliverResult(p *patch.Patch, id string, result any) error { return deliver(p, id, result) }
