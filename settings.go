package kopfgo

import (
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/logging"
)

// The sections of Settings, named so that they can be declared and passed
// around; most code only sets fields: opts.Settings.Persistence.Finalizer =
// "example.com/finalizer". Every field's zero value means Kopf's default;
// the README has the whole table.
type (
	PersistenceSettings = config.Persistence
	ExecutionSettings   = config.Execution
	QueueingSettings    = config.Queueing
	WatchingSettings    = config.Watching
	NetworkingSettings  = config.Networking
	FlowControlSettings = config.FlowControl
	ConditionsSettings  = config.Conditions
	ScanningSettings    = config.Scanning
	ProcessSettings     = config.Process
	PostingSettings     = config.Posting
	HandlingSettings    = config.Handling
)

// LoggingSettings chooses which log messages go on, by logger name
// (Settings.Logging).
type LoggingSettings = config.Logging

// LogFilter decides whether a record of the named logger is written (and,
// for object loggers with Settings.Posting.Loggers, posted as an event):
// false drops it. Set it as Settings.Logging.Filter, in Options or in a
// startup handler. The names are Kopf's: "kopf" for the operator,
// "kopf.objects" for messages about objects (c.Logger among them),
// "kopf.activities.<activity>" for activities, e.g.
// "kopf.activities.authentication". It is called from many goroutines.
type LogFilter = logging.Filter

// SilenceLoggers returns a filter that drops every record of the named
// loggers and of the loggers under them: "kopf.activities" silences
// "kopf.activities.authentication" too.
func SilenceLoggers(names ...string) LogFilter { return logging.Silence(names...) }

// JoinLogFilters returns a filter that keeps a record only if every filter
// keeps it; nil filters keep everything. A startup handler adds to the
// filter of Options with:
//
//	a.Settings.Logging.Filter = kopfgo.JoinLogFilters(a.Settings.Logging.Filter,
//		kopfgo.SilenceLoggers("kopf.activities.authentication"))
func JoinLogFilters(filters ...LogFilter) LogFilter { return logging.Join(filters...) }
