package kopfgo

import "github.com/kopfgo/kopfgo/internal/config"

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
	ScanningSettings    = config.Scanning
	ProcessSettings     = config.Process
	PostingSettings     = config.Posting
)

// DefaultFinalizer is the finalizer Kopf and kopfgo put on objects by default.
const DefaultFinalizer = config.DefaultFinalizer
