package kube

import "log/slog"

// Level is the log level of a line about a failed request of one object:
// DEBUG while the failure is transient (an API server down or overloaded,
// a network error), which the flow control tells once for all objects,
// rather than one line per object and attempt; ERROR otherwise.
func Level(err error) slog.Level {
	if transient(err) {
		return slog.LevelDebug
	}
	return slog.LevelError
}
