package causes

import "github.com/kopfgo/kopfgo/internal/causes"

type (
	Reason = causes.Reason
	Input  = causes.Input
)

const (
	Noop   = causes.Noop
	Create = causes.Create
	Update = causes.Update
	Delete = causes.Delete
	Resume = causes.Resume
	Gone   = causes.Gone
	Free   = causes.Free
)

var (
	Detect          = causes.Detect
	IsDeleting      = causes.IsDeleting
	HasFinalizer    = causes.HasFinalizer
	AddFinalizer    = causes.AddFinalizer
	RemoveFinalizer = causes.RemoveFinalizer
)
