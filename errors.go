package kopfgo

import (
	"errors"
	"time"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// TemporaryError asks for a retry after its Delay.
type TemporaryError = handlers.TemporaryError

// PermanentError fails the handler for the current change without retries.
type PermanentError = handlers.PermanentError

// HandlerTimeoutError is the permanent failure of a handler past its Timeout
// (or that would pass it before its next attempt), with the handler's last
// error inside. Run returns it (errors.As) when a startup handler ends so;
// for other handlers it is the failure logged and stored in their progress.
type HandlerTimeoutError = handlers.HandlerTimeoutError

// RetriesExceededError is the permanent failure of a handler past its
// Retries, as HandlerTimeoutError is past its Timeout.
type RetriesExceededError = handlers.RetriesExceededError

// PanicError is a recovered panic of a handler.
type PanicError = handlers.PanicError

// ErrRegistration marks invalid registrations, returned by Run before
// anything starts.
var ErrRegistration = handlers.ErrRegistration

// ErrUnresolved marks a handler's resource that does not exist: with
// Settings.Scanning.Strict (--strict) or Disabled, Run returns it, inside
// an ErrRegistration naming the handler and the name it may be a typo of.
var ErrUnresolved = resources.ErrUnresolved

// ErrUnknownField marks a handler's field path (On.Field, a Field filter)
// that the CRD's schema does not declare: with Settings.Scanning.Strict
// (--strict), Run returns it, inside an ErrRegistration naming the handler
// and the field it may be a typo of; without, it is a warning.
var ErrUnknownField = resources.ErrUnknownField

// DefaultTemporaryDelay is the delay Kopf gives a TemporaryError by default.
const DefaultTemporaryDelay = handlers.DefaultTemporaryDelay

// Temporary wraps err so that the handler is retried after delay.
func Temporary(err error, delay time.Duration) error {
	return &TemporaryError{Err: err, Delay: delay}
}

// TemporaryMsg is Temporary with a message instead of an error.
func TemporaryMsg(msg string, delay time.Duration) error {
	return Temporary(errors.New(msg), delay)
}

// Permanent wraps err so that the handler is not retried for this change.
func Permanent(err error) error { return &PermanentError{Err: err} }

// PermanentMsg is Permanent with a message instead of an error.
func PermanentMsg(msg string) error { return Permanent(errors.New(msg)) }
