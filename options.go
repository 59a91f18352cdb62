package kopfgo

import (
	"time"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
)

// The option types are interfaces with unexported methods, implemented by
// unexported types (as zap's and controller-runtime's options are): an
// option comes only from this package's constructors, and each concrete
// type has only the methods of the families it fits, so that a misfit does
// not compile and cannot be asserted into fitting either. There is one type
// per family of handler kinds that share their options:
//
//	ChangeOption     create, update, field, delete, resume handlers; sub-handlers
//	SpawnOption      daemons and timers
//	IndexOption      indices
//	AdmissionOption  validating and mutating handlers
//	HandlerOption    every retried kind; the activities take these only
//	FilterOption     every kind of resources; event handlers take these only
//	CommonOption     every kind (ID, Param)
//
// Within a family, an option of one kind only (Optional on a create
// handler, Interval on a daemon) compiles and is a registration error,
// naming the handler, from Err and Run.

// ChangeOption configures a resource-changing handler: create, update,
// field, delete and resume handlers, and sub-handlers. Optional fits delete
// handlers only, Deleted resume handlers only, OldValue and NewValue update
// and field handlers only; elsewhere they are registration errors.
type ChangeOption interface{ applyChange(*handling.Handler) }

// HandlerOption fits every handler kind that is retried: the
// resource-changing handlers, activities, indices, daemons and timers
// (Retries, Backoff, Timeout, Errors). The activities (On.Startup,
// On.Cleanup, On.Login, On.Probe) take HandlerOptions only.
type HandlerOption interface {
	ChangeOption
	SpawnOption
	IndexOption
	applyActivity(*handling.Handler)
}

type handlerOption func(*handling.Handler)

func (o handlerOption) applyChange(h *handling.Handler)   { o(h) }
func (o handlerOption) applyActivity(h *handling.Handler) { o(h) }
func (o handlerOption) applyIndex(h *handling.Handler)    { o(h) }
func (o handlerOption) applySpawn(s *handling.Spawning)   { o(&s.Handler) }

// changeConfig applies the options of a resource-changing handler.
func changeConfig(opts []ChangeOption) func(*handling.Handler) {
	return func(h *handling.Handler) {
		for _, o := range opts {
			o.applyChange(h)
		}
	}
}

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

// changeOption fits the resource-changing handlers only.
type changeOption func(*handling.Handler)

func (o changeOption) applyChange(h *handling.Handler) { o(h) }

// Optional marks a delete handler as not requiring the finalizer: it runs
// only if the operator happens to see the object being deleted. It fits
// delete handlers only.
func Optional() ChangeOption { return changeOption(func(h *handling.Handler) { h.Optional = true }) }

// Deleted makes a resume handler run also for objects found being deleted
// when the operator starts. It fits resume handlers only.
func Deleted() ChangeOption { return changeOption(func(h *handling.Handler) { h.Deleted = true }) }
