package logging

import (
	"io"
	"log/slog"
	"testing"
)

// WithObject is called per object per handling cycle.
func BenchmarkWithObject(b *testing.B) {
	l := New(Config{Writer: io.Discard})
	b.ReportAllocs()
	for b.Loop() {
		_ = WithObject(l, nsRef)
	}
}

// A handler's line, written, per format.
func BenchmarkLog(b *testing.B) {
	for _, f := range Formats {
		b.Run(string(f), func(b *testing.B) {
			l := WithObject(New(Config{Format: f, Writer: io.Discard}), nsRef)
			b.ReportAllocs()
			for b.Loop() {
				l.Info("Handler 'create_fn' succeeded.")
			}
		})
	}
}

func BenchmarkLogAttrs(b *testing.B) {
	for _, f := range Formats {
		b.Run(string(f), func(b *testing.B) {
			l := WithObject(New(Config{Format: f, Writer: io.Discard}), nsRef)
			b.ReportAllocs()
			for b.Loop() {
				l.Info("creating", "retry", 2, "handler", "create_fn")
			}
		})
	}
}

// A filtered-out debug line costs nothing but the level check.
func BenchmarkLogDisabled(b *testing.B) {
	l := WithObject(New(Config{Writer: io.Discard}), nsRef)
	b.ReportAllocs()
	for b.Loop() {
		l.Debug("Something is in progress.", "retry", 2)
	}
}

// The same line through slog's own JSON handler, for comparison.
func BenchmarkSlogJSONHandler(b *testing.B) {
	l := slog.New(slog.NewJSONHandler(io.Discard, nil)).With("object", nsRef)
	b.ReportAllocs()
	for b.Loop() {
		l.Info("Handler 'create_fn' succeeded.")
	}
}

// For comparison: the object as attributes through With, which clones and
// pre-encodes (what a zapslog-based design would do per object).
func BenchmarkWithAttrsInstead(b *testing.B) {
	l := New(Config{Format: FormatJSON, Writer: io.Discard})
	b.ReportAllocs()
	for b.Loop() {
		_ = l.With(slog.Group("object", "apiVersion", nsRef.APIVersion, "kind", nsRef.Kind,
			"name", nsRef.Name, "uid", nsRef.UID, "namespace", nsRef.Namespace))
	}
}

// The operator's loggers are all under a filter (WithFilter), set or not.
func BenchmarkFiltered(b *testing.B) {
	for _, tc := range []struct {
		name   string
		filter Filter
	}{{"unset", nil}, {"silence", Silence("kopf.activities")}} {
		var v FilterVar
		v.Set(tc.filter)
		root := WithFilter(New(Config{Writer: io.Discard}), &v)
		b.Run("WithObject/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = WithObject(root, nsRef)
			}
		})
		b.Run("Log/"+tc.name, func(b *testing.B) {
			l := WithObject(root, nsRef)
			b.ReportAllocs()
			for b.Loop() {
				l.Info("Handler 'create_fn' succeeded.")
			}
		})
	}
}
