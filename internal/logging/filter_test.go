package logging

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

func record(msg string) slog.Record { return slog.NewRecord(time.Time{}, slog.LevelInfo, msg, 0) }

func TestSilence(t *testing.T) {
	f := Silence("kopf.activities", "kopf.objects")
	for _, tc := range []struct {
		logger string
		keep   bool
	}{
		{"kopf.activities", false},
		{"kopf.activities.authentication", false},
		{"kopf.activities.startup.more", false},
		{"kopf.objects", false},
		{"kopf.activitiesx", true},
		{"kopf.activ", true},
		{"kopf", true},
		{"", true},
		{"klog", true},
	} {
		if got := f(tc.logger, record("m")); got != tc.keep {
			t.Errorf("Silence(kopf.activities, kopf.objects)(%q) = %v, want %v", tc.logger, got, tc.keep)
		}
	}
	if !Silence()("kopf", record("m")) {
		t.Error("Silence() dropped a record")
	}
}

func TestJoin(t *testing.T) {
	noSecrets := func(_ string, r slog.Record) bool { return !strings.Contains(r.Message, "secret") }
	if Join() != nil || Join(nil, nil) != nil {
		t.Error("Join of no filters is not nil")
	}
	f := Join(nil, Silence("kopf.activities"), noSecrets)
	for _, tc := range []struct {
		logger, msg string
		keep        bool
	}{
		{"kopf.objects", "hello", true},
		{"kopf.objects", "a secret", false},
		{"kopf.activities.authentication", "hello", false},
	} {
		if got := f(tc.logger, record(tc.msg)); got != tc.keep {
			t.Errorf("Join(...)(%q, %q) = %v, want %v", tc.logger, tc.msg, got, tc.keep)
		}
	}
}

// The filter sees each logger's own name, whatever the handler below, and
// drops what it returns false for.
func TestWithFilter(t *testing.T) {
	var buf bytes.Buffer
	foreign := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey || a.Key == slog.LevelKey {
			return slog.Attr{}
		}
		return a
	}}))
	for _, tc := range []struct {
		name string
		base *slog.Logger
		want string // the lines written
	}{{
		name: "New",
		base: New(Config{Format: FormatFull, Writer: &buf, Name: "kopf.custom"}),
		want: "kopf.custom          [INFO    ] root kept\n" +
			"kopf.activities.star [INFO    ] startup kept\n" +
			"kopf.objects         [INFO    ] [default/kopf-example-1] object kept k=v\n",
	}, {
		name: "foreign",
		base: foreign,
		want: "msg=\"root kept\"\n" +
			"msg=\"startup kept\" logger=kopf.activities.startup\n" +
			"msg=\"object kept\" k=v object.apiVersion=kopf.dev/v1 object.kind=KopfExample object.name=kopf-example-1 object.uid=uid-1 object.namespace=default\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			buf.Reset()
			var seen []string
			var v FilterVar
			v.Set(func(logger string, r slog.Record) bool {
				seen = append(seen, logger)
				return !strings.Contains(r.Message, "dropped") && logger != "kopf.activities.authentication"
			})
			l := WithFilter(tc.base, &v)
			l.Info("root kept")
			l.Info("root dropped")
			Named(l, "kopf.activities.startup").Info("startup kept")
			Named(l, "kopf.activities.authentication").Info("authentication")
			obj := WithObject(l.With("k", "v"), nsRef)
			obj.Info("object kept")
			obj.WithGroup("g").Info("object dropped", "x", 1)
			obj.Debug("below the level: never filtered")

			got := buf.String()
			if tc.name == "New" {
				got = stripTimes(got)
			}
			if got != tc.want {
				t.Errorf("written:\n%s\nwant:\n%s", got, tc.want)
			}
			wantSeen := []string{"kopf.custom", "kopf.custom", "kopf.activities.startup",
				"kopf.activities.authentication", "kopf.objects", "kopf.objects"}
			if tc.name == "foreign" {
				wantSeen[0], wantSeen[1] = DefaultName, DefaultName
			}
			if strings.Join(seen, ",") != strings.Join(wantSeen, ",") {
				t.Errorf("the filter saw %q, want %q", seen, wantSeen)
			}
		})
	}
}

// stripTimes drops the full format's "[timestamp] " from each line.
func stripTimes(s string) string {
	var out strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if _, rest, ok := strings.Cut(line, "] "); ok {
			line = rest
		}
		out.WriteString(line)
	}
	return out.String()
}

// With no filter set, or nil set, everything goes through.
func TestFilterVarNil(t *testing.T) {
	var buf bytes.Buffer
	var v FilterVar
	l := WithFilter(New(Config{Format: FormatPlain, Writer: &buf}), &v)
	l.Info("one")
	v.Set(Silence("kopf"))
	l.Info("silenced")
	v.Set(nil)
	l.Info("two")
	if got := buf.String(); got != "one\ntwo\n" {
		t.Errorf("written %q, want %q", got, "one\ntwo\n")
	}
}

// A handler put Beneath the filter sees only what the filter keeps; without
// a filter it wraps the logger's handler.
func TestBeneath(t *testing.T) {
	var buf bytes.Buffer
	var v FilterVar
	v.Set(func(_ string, r slog.Record) bool { return !strings.Contains(r.Message, "secret") })
	var teed []string
	tee := func(inner slog.Handler) slog.Handler {
		return &recordingHandler{Handler: inner, msgs: &teed}
	}
	base := New(Config{Format: FormatPlain, Writer: &buf})
	l := Beneath(WithObject(WithFilter(base, &v), nsRef), tee)
	l.Info("a secret")
	l.With("k", 1).Info("public")
	Beneath(base, tee).Info("unfiltered secret")
	if got := strings.Join(teed, "|"); got != "public|unfiltered secret" {
		t.Errorf("teed %q, want %q", got, "public|unfiltered secret")
	}
	if got := buf.String(); got != "[default/kopf-example-1] public k=1\nunfiltered secret\n" {
		t.Errorf("written %q", got)
	}

	// The same beneath the filter of a logger not made by New.
	teed = nil
	foreign := slog.New(slog.NewTextHandler(io.Discard, nil))
	l = Beneath(WithObject(WithFilter(foreign, &v), nsRef), tee)
	l.Info("a secret")
	l.Info("public")
	if got := strings.Join(teed, "|"); got != "public" {
		t.Errorf("teed %q beneath a foreign logger's filter, want %q", got, "public")
	}
}

type recordingHandler struct {
	slog.Handler
	msgs *[]string
}

func (h *recordingHandler) Handle(ctx context.Context, r slog.Record) error {
	*h.msgs = append(*h.msgs, r.Message)
	return h.Handler.Handle(ctx, r)
}

func (h *recordingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &recordingHandler{Handler: h.Handler.WithAttrs(attrs), msgs: h.msgs}
}

// The filter may be replaced while loggers log from many goroutines (as a
// startup handler's filter replaces that of Options); run with -race.
func TestFilterSetWhileLogging(t *testing.T) {
	var buf bytes.Buffer
	var v FilterVar
	l := WithFilter(New(Config{Format: FormatPlain, Writer: &buf}), &v)
	const goroutines, each = 4, 100
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			<-start
			for range each {
				Named(l, "kopf.activities.authentication").Info("re-auth")
				WithObject(l, nsRef).Info("object")
			}
		})
	}
	close(start)
	v.Set(Silence("kopf.activities"))
	wg.Wait()
	out := buf.String()
	if n := strings.Count(out, "object\n"); n != goroutines*each {
		t.Errorf("%d object lines, want %d", n, goroutines*each)
	}
	// Once set, nothing more of the silenced logger comes through.
	buf.Reset()
	Named(l, "kopf.activities.authentication").Info("re-auth")
	if buf.Len() != 0 {
		t.Errorf("a silenced logger wrote %q", buf.String())
	}
}
