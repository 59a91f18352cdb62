package posting

import (
	"context"
	"log/slog"

	"github.com/kopfgo/kopfgo/internal/logging"
)

// LoggingReason is the reason of events made from log messages.
const LoggingReason = "Logging"

// Logger returns l, also posting its messages at or above Settings.Level as
// events about ref when Settings.Loggers is on (compat: events-loggers). Otherwise it
// returns l itself, so the default costs nothing. The events are posted
// beneath l's filter (logging.WithFilter): a message the filter drops is
// neither written nor posted (compat: logging-filters).
func (p *Poster) Logger(l *slog.Logger, ref Ref) *slog.Logger {
	if p == nil || !p.cfg.Settings.Loggers || p.cfg.Settings.Disabled || ref.isEvent() {
		return l
	}
	return logging.Beneath(l, func(inner slog.Handler) slog.Handler {
		return &teeHandler{inner: inner, p: p, ref: ref}
	})
}

// LevelType is the event type Kopf gives a log message of this level.
func LevelType(l slog.Level) string {
	switch {
	case l <= slog.LevelDebug:
		return "Debug"
	case l <= slog.LevelInfo:
		return "Normal"
	case l <= slog.LevelWarn:
		return "Warning"
	case l <= slog.LevelError:
		return "Error"
	}
	return "Fatal"
}

// teeHandler passes records on to the log and posts those at or above the
// posting level. The two levels are independent: with -q, INFO messages are
// still posted though not written.
type teeHandler struct {
	inner slog.Handler
	p     *Poster
	ref   Ref
}

func (h *teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.p.cfg.Settings.Level || h.inner.Enabled(ctx, l)
}

func (h *teeHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= h.p.cfg.Settings.Level {
		// Best-effort, like every event: a stopped poster drops it.
		_ = h.p.enqueue(h.ref, LevelType(r.Level), LoggingReason, r.Message)
	}
	if !h.inner.Enabled(ctx, r.Level) {
		return nil
	}
	return h.inner.Handle(ctx, r)
}

func (h *teeHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &teeHandler{inner: h.inner.WithAttrs(attrs), p: h.p, ref: h.ref}
}

func (h *teeHandler) WithGroup(name string) slog.Handler {
	return &teeHandler{inner: h.inner.WithGroup(name), p: h.p, ref: h.ref}
}
