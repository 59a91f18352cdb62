package timers

import "github.com/kopfgo/kopfgo/internal/timers"

type (
	Schedule = timers.Schedule
	Next     = timers.Next
	Changes  = timers.Changes
)

const (
	Sleep       = timers.Sleep
	AwaitChange = timers.AwaitChange
	Once        = timers.Once
)

// NewChanges starts tracking an object's changes from now.
var NewChanges = timers.NewChanges
