package causes

import "github.com/kopfgo/kopfgo/internal/causes"

// Reason is why a resource-changing handler runs (kopfgo.Reason).
type Reason = causes.Reason

// The reasons a handler is given.
const (
	Create = causes.Create
	Update = causes.Update
	Delete = causes.Delete
	Resume = causes.Resume
)
