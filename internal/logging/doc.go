// Package logging writes kopfgo's logs in Kopf's formats (compat: logging):
// "full" (the default: timestamp, logger name, level, message), "plain" (the
// message only) and "json" (one object per line with message, severity,
// timestamp and, for object-related records, a reference to the object).
//
// It exists so that logs of an operator ported from Kopf read the same and
// feed the same log parsers, while handlers and the framework use the
// standard *slog.Logger API. Records go from a small slog.Handler to a zap
// core whose encoders render Kopf's formats; zap provides the pooled buffers,
// the JSON escaping and the locked writer.
//
// Object-related loggers (WithObject) prefix messages with "[namespace/name] "
// in the text formats and carry the object reference under the refkey in
// JSON. Attributes given to slog (c.Logger.Info("creating", "spec", spec)),
// which Kopf's formats have no place for, are written after the message as
// " key=value" pairs in the text formats (composite values as compact JSON)
// and as extra top-level fields in JSON.
//
// Loggers carry Kopf's names ("kopf", "kopf.objects",
// "kopf.activities.<activity>"), and a Filter under WithFilter drops records by
// name and content (compat: logging-names, logging-filters). Event posting tees
// object loggers Beneath the filter, so that one filter governs both the log
// and the events.
package logging
