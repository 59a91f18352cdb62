package logging

import (
	"context"
	"log/slog"
	"math"

	"go.uber.org/zap/zapcore"
)

// FromZapCore is a slog.Handler writing into a zap core of the user's, with
// the core's own encoder and level. It converts records as New's handler
// does, but it is not one of kopfgo's handlers: the logger name and the
// object reach the core as fields ("logger", and the object group), as with
// any foreign slog.Handler, since the user's encoder knows nothing of Kopf's
// name column or prefix.
func FromZapCore(core zapcore.Core) slog.Handler {
	return &zapHandler{h: &handler{core: core, level: math.MinInt}}
}

type zapHandler struct{ h *handler }

func (z *zapHandler) Enabled(_ context.Context, l slog.Level) bool {
	return z.h.core.Enabled(zapLevel(l))
}

func (z *zapHandler) Handle(ctx context.Context, r slog.Record) error { return z.h.Handle(ctx, r) }

func (z *zapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &zapHandler{h: z.h.WithAttrs(attrs).(*handler)}
}

func (z *zapHandler) WithGroup(name string) slog.Handler {
	return &zapHandler{h: z.h.WithGroup(name).(*handler)}
}

// ToZapCore is a zap core writing into a slog.Handler: for libraries that
// log through zap, to log through kopfgo's loggers (and Kopf's formats).
// Fields become attributes; the zap logger's name, if any, a "logger"
// attribute.
func ToZapCore(h slog.Handler) zapcore.Core { return &slogCore{h: h} }

type slogCore struct{ h slog.Handler }

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	}
	return slog.LevelError
}

func (c *slogCore) Enabled(l zapcore.Level) bool {
	return c.h.Enabled(context.Background(), slogLevel(l))
}

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	return &slogCore{h: c.h.WithAttrs(zapAttrs(fields))}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	r := slog.NewRecord(e.Time, slogLevel(e.Level), e.Message, 0)
	if e.LoggerName != "" {
		r.AddAttrs(slog.String("logger", e.LoggerName))
	}
	r.AddAttrs(zapAttrs(fields)...)
	return c.h.Handle(context.Background(), r)
}

func (c *slogCore) Sync() error { return nil }

// zapAttrs converts zap fields to slog attributes through zap's own map
// encoder, which knows every field type.
func zapAttrs(fields []zapcore.Field) []slog.Attr {
	if len(fields) == 0 {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range fields {
		f.AddTo(enc)
	}
	attrs := make([]slog.Attr, 0, len(enc.Fields))
	for k, v := range enc.Fields {
		attrs = append(attrs, slog.Any(k, v))
	}
	return attrs
}
