package logging

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
)

// Filter decides whether a record of the named logger goes on: false drops
// it, from the written log and from the events that object loggers post.
// It sees the record's message, level, time and the attributes of the call
// (not those added by With), and is called from many goroutines at once.
//
// Kopf users control noise through Python's named loggers (compat:
// logging-names, logging-filters); a Filter is the Go way to do the same with
// kopfgo's names: "kopf" for the operator, "kopf.objects" for messages about
// objects, and "kopf.activities.<activity>" for activities, e.g.
// "kopf.activities.authentication" for (re-)authentication.
type Filter func(logger string, r slog.Record) bool

// Silence returns a filter that drops every record of the named loggers and
// of the loggers under them: "kopf.activities" silences
// "kopf.activities.authentication" too, but not "kopf.activitiesx".
func Silence(names ...string) Filter {
	names = append([]string(nil), names...)
	return func(logger string, _ slog.Record) bool {
		for _, n := range names {
			if Under(logger, n) {
				return false
			}
		}
		return true
	}
}

// Under says whether logger is name or below it in the dotted hierarchy.
func Under(logger, name string) bool {
	return strings.HasPrefix(logger, name) && (len(logger) == len(name) || logger[len(name)] == '.')
}

// Join returns a filter that keeps a record only if every filter keeps it;
// nil filters keep everything, and Join of none (or of nils only) is nil.
func Join(filters ...Filter) Filter {
	var fs []Filter
	for _, f := range filters {
		if f != nil {
			fs = append(fs, f)
		}
	}
	switch len(fs) {
	case 0:
		return nil
	case 1:
		return fs[0]
	}
	return func(logger string, r slog.Record) bool {
		for _, f := range fs {
			if !f(logger, r) {
				return false
			}
		}
		return true
	}
}

// FilterVar holds the filter of the loggers made by WithFilter. It may be
// set while they log: an operator sets it when it starts and again after
// its startup handlers, which may change the filter. The zero value keeps
// everything.
type FilterVar struct{ f atomic.Pointer[Filter] }

// Set makes f the filter; nil keeps everything.
func (v *FilterVar) Set(f Filter) {
	if f == nil {
		v.f.Store(nil)
		return
	}
	v.f.Store(&f)
}

func (v *FilterVar) keeps(logger string, r slog.Record) bool {
	f := v.f.Load()
	return f == nil || (*f)(logger, r)
}

// WithFilter returns l, dropping the records that v's filter drops. The
// loggers derived from it by Named and WithObject are filtered under their
// own names; l itself is "kopf" unless made by New with another name.
//
// This works for any logger, not only those of New: a logger's name is kept
// here, next to its handler, whether that handler shows it in a column (New)
// or as a "logger" attribute (any other).
func WithFilter(l *slog.Logger, v *FilterVar) *slog.Logger {
	name := DefaultName
	if h, ok := l.Handler().(*handler); ok {
		name = h.name
	}
	return slog.New(&filtered{inner: l.Handler(), name: name, v: v})
}

// Beneath returns l with its handler wrapped by wrap, beneath l's filter if
// it has one (WithFilter), so that the wrapping handler sees only the
// records that the filter keeps. Event posting tees object loggers this way.
func Beneath(l *slog.Logger, wrap func(slog.Handler) slog.Handler) *slog.Logger {
	if h, ok := l.Handler().(*filtered); ok {
		c := *h
		c.inner = wrap(h.inner)
		return slog.New(&c)
	}
	return slog.New(wrap(l.Handler()))
}

// filtered is the handler of WithFilter: it asks the filter about each
// record before its inner handler sees it. It knows its logger's name for
// the filter, as a foreign inner handler cannot tell it.
type filtered struct {
	inner slog.Handler
	name  string
	v     *FilterVar
}

func (h *filtered) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h *filtered) Handle(ctx context.Context, r slog.Record) error {
	if !h.v.keeps(h.name, r) {
		return nil
	}
	return h.inner.Handle(ctx, r)
}

func (h *filtered) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	c := *h
	c.inner = h.inner.WithAttrs(attrs)
	return &c
}

func (h *filtered) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.inner = h.inner.WithGroup(name)
	return &c
}
