package kopfgo

import (
	"time"

	"github.com/kopfgo/kopfgo/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
)

// ChangeOption configures a create, update or field handler.
type ChangeOption interface{ applyChange(*handling.Handler) }

// DeleteOption configures a delete handler.
type DeleteOption interface{ applyDelete(*handling.Handler) }

// ResumeOption configures a resume handler.
type ResumeOption interface{ applyResume(*handling.Handler) }

// The option types are interfaces with unexported methods, implemented by
// unexported types (as zap's and controller-runtime's options are): an
// option comes only from this package's constructors, and each concrete
// type has only the methods of the kinds it fits, so that a misfit does not
// compile and cannot be asserted into fitting either.

// HandlerOption fits every handler kind that is retried: the
// resource-changing handlers, activities, indices, daemons and timers
// (Retries, Backoff, Timeout, Errors).
type HandlerOption interface {
	ChangeOption
	DeleteOption
	ResumeOption
	ActivityOption
	IndexOption
	DaemonOption
	TimerOption
}

type handlerOption func(*handling.Handler)

func (o handlerOption) applyChange(h *handling.Handler) { o(h) }
func (o handlerOption) applyDelete(h *handling.Handler) { o(h) }
func (o handlerOption) applyResume(h *handling.Handler) { o(h) }

// ID sets the handler's id, which keys its persisted progress and its result
// in status. Required for closures; field handlers get "/<field>" appended.
// It fits every handler kind; for an index, it is the index's name.
func ID(id string) CommonOption { return commonOption(func(h *handling.Handler) { h.ID = id }) }

// Retries limits the attempts of a handler; after the last one it fails
// permanently. Default: unlimited.
func Retries(n int) HandlerOption { return handlerOption(func(h *handling.Handler) { h.Retries = n }) }

// Backoff is the delay before retrying after an arbitrary error. Default:
// Settings.Execution.DefaultBackoff (60s). TemporaryError carries its own.
func Backoff(d time.Duration) HandlerOption {
	return handlerOption(func(h *handling.Handler) { h.Backoff = d })
}

// Timeout fails the handler permanently once this much time has passed since
// its first attempt; the handler's ctx carries the deadline.
func Timeout(d time.Duration) HandlerOption {
	return handlerOption(func(h *handling.Handler) { h.Timeout = d })
}

// ErrorsMode says how errors other than TemporaryError and PermanentError
// are treated.
type ErrorsMode = handlers.ErrorsMode

// The errors modes.
const (
	ErrorsTemporary = handlers.ErrorsTemporary
	ErrorsPermanent = handlers.ErrorsPermanent
	ErrorsIgnored   = handlers.ErrorsIgnored
)

// Errors sets the handler's errors mode. Default: ErrorsTemporary.
func Errors(mode ErrorsMode) HandlerOption {
	return handlerOption(func(h *handling.Handler) { h.Errors = mode })
}

// Param is passed to the handler as Param, so that one function can serve
// several registrations. It fits every handler kind.
func Param(v any) CommonOption { return commonOption(func(h *handling.Handler) { h.Param = v }) }

type deleteOption func(*handling.Handler)

func (o deleteOption) applyDelete(h *handling.Handler) { o(h) }

// Optional marks a delete handler as not requiring the finalizer: it runs
// only if the operator happens to see the object being deleted.
func Optional() DeleteOption { return deleteOption(func(h *handling.Handler) { h.Optional = true }) }

type resumeOption func(*handling.Handler)

func (o resumeOption) applyResume(h *handling.Handler) { o(h) }

// Deleted makes a resume handler run also for objects found being deleted
// when the operator starts.
func Deleted() ResumeOption { return resumeOption(func(h *handling.Handler) { h.Deleted = true }) }
