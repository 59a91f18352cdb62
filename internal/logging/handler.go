package logging

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// handler is the slog.Handler of New: it turns slog records into zap
// entries and fields, and writes them to a zap core whose encoder renders
// Kopf's formats. It is immutable: With… and WithObject copy it.
type handler struct {
	core   zapcore.Core // with the accumulated With attributes
	level  slog.Level
	name   string
	groups []string // groups opened by WithGroup but not yet by any attribute
	ref    ObjectRef
	hasRef bool
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

var fieldPool = sync.Pool{New: func() any { s := make([]zapcore.Field, 0, 8); return &s }}

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	p := fieldPool.Get().(*[]zapcore.Field)
	fields := (*p)[:0]
	if h.hasRef {
		// The encoders take the reference out of the fields; other
		// encoders skip it.
		fields = append(fields, zapcore.Field{Type: zapcore.SkipType, Interface: &h.ref})
	}
	if r.NumAttrs() > 0 {
		for _, g := range h.groups {
			fields = append(fields, zap.Namespace(g))
		}
		r.Attrs(func(a slog.Attr) bool {
			fields = appendAttr(fields, a)
			return true
		})
	}
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	err := h.core.Write(zapcore.Entry{
		Level:      zapLevel(r.Level),
		Time:       t,
		LoggerName: h.name,
		Message:    r.Message,
	}, fields)
	clear(fields)
	*p = fields[:0]
	fieldPool.Put(p)
	return err
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	fields := make([]zapcore.Field, 0, len(h.groups)+len(attrs))
	for _, g := range h.groups {
		fields = append(fields, zap.Namespace(g))
	}
	for _, a := range attrs {
		fields = appendAttr(fields, a)
	}
	c := *h
	c.core = h.core.With(fields)
	c.groups = nil
	return &c
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.groups = append(h.groups[:len(h.groups):len(h.groups)], name)
	return &c
}

// zapLevel maps slog levels to zap's as Kopf maps Python's levels to JSON
// severities: up to DEBUG is debug, up to INFO info, up to WARNING warn, up
// to ERROR error, anything above fatal (written, never exiting).
func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l <= slog.LevelDebug:
		return zapcore.DebugLevel
	case l <= slog.LevelInfo:
		return zapcore.InfoLevel
	case l <= slog.LevelWarn:
		return zapcore.WarnLevel
	case l <= slog.LevelError:
		return zapcore.ErrorLevel
	}
	return zapcore.FatalLevel
}

// appendAttr converts a slog attribute to zap fields, following the rules
// of slog.Handler: values are resolved, empty attributes and empty groups
// are dropped, groups without a key are inlined.
func appendAttr(fields []zapcore.Field, a slog.Attr) []zapcore.Field {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return append(fields, zap.String(a.Key, v.String()))
	case slog.KindInt64:
		return append(fields, zap.Int64(a.Key, v.Int64()))
	case slog.KindUint64:
		return append(fields, zap.Uint64(a.Key, v.Uint64()))
	case slog.KindFloat64:
		return append(fields, zap.Float64(a.Key, v.Float64()))
	case slog.KindBool:
		return append(fields, zap.Bool(a.Key, v.Bool()))
	case slog.KindDuration:
		return append(fields, zap.Duration(a.Key, v.Duration()))
	case slog.KindTime:
		return append(fields, zap.Time(a.Key, v.Time()))
	case slog.KindGroup:
		attrs := v.Group()
		if len(attrs) == 0 {
			return fields
		}
		if a.Key == "" {
			for _, ga := range attrs {
				fields = appendAttr(fields, ga)
			}
			return fields
		}
		return append(fields, zap.Object(a.Key, group(attrs)))
	}
	x := v.Any()
	if x == nil && a.Key == "" {
		return fields // the empty Attr
	}
	if err, ok := x.(error); ok {
		return append(fields, zap.String(a.Key, errorString(err)))
	}
	return append(fields, zap.Reflect(a.Key, x))
}

// errorString is err.Error(), safe for nil pointers in non-nil interfaces.
func errorString(err error) (s string) {
	defer func() {
		if r := recover(); r != nil {
			s = fmt.Sprintf("<error: %v>", r)
		}
	}()
	return err.Error()
}

// group is a slog group as a zap object.
type group []slog.Attr

func (g group) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	var buf [8]zapcore.Field
	fields := buf[:0]
	for _, a := range g {
		fields = appendAttr(fields, a)
	}
	for i := range fields {
		fields[i].AddTo(enc)
	}
	return nil
}

// takeRef takes the object reference that the handler puts first in the
// fields of object-related records.
func takeRef(fields []zapcore.Field) (*ObjectRef, []zapcore.Field) {
	if len(fields) > 0 && fields[0].Type == zapcore.SkipType {
		if ref, ok := fields[0].Interface.(*ObjectRef); ok {
			return ref, fields[1:]
		}
	}
	return nil, fields
}
