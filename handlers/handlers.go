package handlers

import "github.com/kopfgo/kopfgo/internal/handlers"

type (
	Activity             = handlers.Activity
	ActivityKind         = handlers.ActivityKind
	Admission            = handlers.Admission
	AdmissionError       = handlers.AdmissionError
	AdmissionFunc        = handlers.AdmissionFunc
	AdmissionKind        = handlers.AdmissionKind
	Attempt              = handlers.Attempt
	Change               = handlers.Change
	ChangeFunc           = handlers.ChangeFunc
	ErrorsMode           = handlers.ErrorsMode
	EventFunc            = handlers.EventFunc
	EventType            = handlers.EventType
	HandlerTimeoutError  = handlers.HandlerTimeoutError
	Marker               = handlers.Marker
	Memo                 = handlers.Memo
	Object               = handlers.Object
	PanicError           = handlers.PanicError
	PermanentError       = handlers.PermanentError
	RetriesExceededError = handlers.RetriesExceededError
	Spawn                = handlers.Spawn
	SpawnFunc            = handlers.SpawnFunc
	TemporaryError       = handlers.TemporaryError
	WatchEvent           = handlers.WatchEvent
)

const (
	Startup = handlers.Startup
	Login   = handlers.Login
	Probe   = handlers.Probe
	Cleanup = handlers.Cleanup

	Validating = handlers.Validating
	Mutating   = handlers.Mutating

	Present = handlers.Present
	Absent  = handlers.Absent

	ErrorsTemporary = handlers.ErrorsTemporary
	ErrorsPermanent = handlers.ErrorsPermanent
	ErrorsIgnored   = handlers.ErrorsIgnored

	EventListed   = handlers.EventListed
	EventAdded    = handlers.EventAdded
	EventModified = handlers.EventModified
	EventDeleted  = handlers.EventDeleted

	DefaultTemporaryDelay = handlers.DefaultTemporaryDelay
)

// The errors are the engine's own values, so that errors.Is matches them
// whichever path a user imports.
var (
	ErrResourceDeleted    = handlers.ErrResourceDeleted
	ErrFiltersMismatch    = handlers.ErrFiltersMismatch
	ErrOperatorExiting    = handlers.ErrOperatorExiting
	ErrOperatorPausing    = handlers.ErrOperatorPausing
	ErrNoParentHandler    = handlers.ErrNoParentHandler
	ErrRegistration       = handlers.ErrRegistration
	ErrSubhandlersPending = handlers.ErrSubhandlersPending
)
