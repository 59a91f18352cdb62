package handlers

import (
	"errors"
	"fmt"
	"time"
)

// TemporaryError asks for a retry after Delay, without counting as a failure
// of the handler's logic. A zero Delay retries at once. Kopf's default delay
// is DefaultTemporaryDelay; use Temporary to get it.
type TemporaryError struct {
	Err   error
	Delay time.Duration
}

// DefaultTemporaryDelay is Kopf's default delay of a TemporaryError (60s);
// it is not affected by the default backoff setting.
const DefaultTemporaryDelay = 60 * time.Second

func (e *TemporaryError) Error() string {
	if e.Err == nil {
		return "temporary error"
	}
	return e.Err.Error()
}

func (e *TemporaryError) Unwrap() error { return e.Err }

// PermanentError stops retrying: the handler has failed for this change.
type PermanentError struct {
	Err error
}

func (e *PermanentError) Error() string {
	if e.Err == nil {
		return "permanent error"
	}
	return e.Err.Error()
}

func (e *PermanentError) Unwrap() error { return e.Err }

// Is makes every PermanentError match errors.Is(err, &PermanentError{}), and
// lets the timeout and retries errors match it too.
func (e *PermanentError) Is(target error) bool {
	_, ok := target.(*PermanentError)
	return ok
}

// HandlerTimeoutError is the permanent failure of a handler whose Timeout has
// passed since its first attempt, or would have passed before its next one
// (Kopf's HandlerTimeoutError). Err is the last error of the handler, nil
// when the time was up before an attempt.
type HandlerTimeoutError struct {
	ID      string
	Timeout time.Duration
	Runtime time.Duration
	Err     error
}

func (e *HandlerTimeoutError) Error() string {
	msg := fmt.Sprintf("handler %q has timed out after %s", e.ID, e.Timeout)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the handler's last error.
func (e *HandlerTimeoutError) Unwrap() error { return e.Err }

// Is makes the timeout a permanent error.
func (e *HandlerTimeoutError) Is(target error) bool {
	_, ok := target.(*PermanentError)
	return ok
}

// RetriesExceededError is the permanent failure of a handler that has used up
// its Retries (Kopf's HandlerRetriesError). Err is the last error of the
// handler, nil when the retries were used up before an attempt.
type RetriesExceededError struct {
	ID      string
	Retries int
	Err     error
}

func (e *RetriesExceededError) Error() string {
	msg := fmt.Sprintf("handler %q has exceeded %d retries", e.ID, e.Retries)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the handler's last error.
func (e *RetriesExceededError) Unwrap() error { return e.Err }

// Is makes exceeded retries a permanent error.
func (e *RetriesExceededError) Is(target error) bool {
	_, ok := target.(*PermanentError)
	return ok
}

// PanicError is a handler's panic, recovered and treated as an error of the
// handler's errors mode.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// ErrorsMode says how an error that is neither a TemporaryError nor a
// PermanentError is treated.
type ErrorsMode int

const (
	// ErrorsTemporary retries after the handler's backoff (the default).
	ErrorsTemporary ErrorsMode = iota
	// ErrorsPermanent fails the handler for this change at once.
	ErrorsPermanent
	// ErrorsIgnored logs the error and treats the handler as finished.
	ErrorsIgnored
)

func (m ErrorsMode) String() string {
	switch m {
	case ErrorsTemporary:
		return "temporary"
	case ErrorsPermanent:
		return "permanent"
	case ErrorsIgnored:
		return "ignored"
	}
	return fmt.Sprintf("ErrorsMode(%d)", int(m))
}

// ErrRegistration marks errors in handler registrations, reported by Run.
var ErrRegistration = errors.New("invalid handler registration")
