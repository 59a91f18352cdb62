package handlers

import (
	"log/slog"

	"github.com/kopfgo/kopfgo/internal/config"
)

// ActivityKind names an operator-level activity.
type ActivityKind string

// The activities, in the order of an operator's life.
const (
	Startup ActivityKind = "startup"
	Login   ActivityKind = "login"
	Probe   ActivityKind = "probe"
	Cleanup ActivityKind = "cleanup"
)

// Activity is the argument of operator-level handlers: startup, cleanup,
// login and probe handlers. Settings may be changed by startup handlers,
// before anything else of the operator starts.
type Activity struct {
	Attempt
	Kind     ActivityKind
	Logger   *slog.Logger
	Memo     *Memo // the operator's memo, shared by all its activities
	Settings *config.Settings
	Param    any
}
