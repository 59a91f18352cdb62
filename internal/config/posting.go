package config

import "log/slog"

// Posting tunes the Kubernetes Events the operator posts about objects
// (settings.posting in Kopf). The zero value is Kopf's default: posting
// enabled, at INFO and above, logger messages not posted.
type Posting struct {
	// Disabled stops all event posting, including explicit kopfgo.Event,
	// Info, Warn and Exception calls (settings.posting.enabled = False).
	Disabled bool
	// Level is the lowest severity posted: Info needs Level <= slog.LevelInfo,
	// Warn <= slog.LevelWarn, Exception <= slog.LevelError; Event is gated
	// by Disabled only. Kopf's logging levels map to slog's: DEBUG is
	// slog.LevelDebug, INFO slog.LevelInfo (the zero value, the default),
	// WARNING slog.LevelWarn, ERROR slog.LevelError.
	Level slog.Level
	// Loggers also posts the messages of the per-object loggers handlers get
	// (and of the framework about objects) at or above Level, with reason
	// "Logging" and a type by level: Debug, Normal, Warning, Error. Default
	// false, as in Kopf since 2026 (its manual still says true).
	Loggers bool
	// ReportingComponent goes to the events' reportingComponent and
	// source.component (kubectl's "From" column). Default "kopf".
	ReportingComponent string
	// ReportingInstance goes to the events' reportingInstance. Default "dev".
	ReportingInstance string
	// EventNamePrefix is the events' metadata.generateName. Default
	// "kopf-event-".
	EventNamePrefix string
}

// The defaults of Posting, as in Kopf.
const (
	DefaultReportingComponent = "kopf"
	DefaultReportingInstance  = "dev"
	DefaultEventNamePrefix    = "kopf-event-"
)

func (p Posting) withDefaults() Posting {
	if p.ReportingComponent == "" {
		p.ReportingComponent = DefaultReportingComponent
	}
	if p.ReportingInstance == "" {
		p.ReportingInstance = DefaultReportingInstance
	}
	if p.EventNamePrefix == "" {
		p.EventNamePrefix = DefaultEventNamePrefix
	}
	return p
}
