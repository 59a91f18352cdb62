package config

import "github.com/kopfgo/kopfgo/internal/logging"

// Logging chooses which log messages go on, by logger name. It is not in
// Kopf's settings, which leave this to Python's logging machinery (compat: logging-names,
// logging-filters). The format and the level are not here either: they are set
// before the operator starts (flags, Options.Logger), as in Kopf, since a
// startup handler would be too late for them; a filter is not.
type Logging struct {
	// Filter drops the records it returns false for, both from the log and
	// from the events posted from object loggers (Posting.Loggers). It gets
	// the logger's name: "kopf" for the operator, "kopf.objects" for
	// messages about objects (the handlers' c.Logger among them), and
	// "kopf.activities.<activity>" for activities, e.g.
	// "kopf.activities.authentication" for (re-)authentication. Set in a
	// startup handler, it applies as soon as the startup handlers have
	// finished, to every logger of the operator. Default nil: keep all.
	Filter logging.Filter
}
