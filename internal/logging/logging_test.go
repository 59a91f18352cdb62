package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	nsRef = ObjectRef{APIVersion: "kopf.dev/v1", Kind: "KopfExample", Name: "kopf-example-1", UID: "uid-1", Namespace: "default"}
	clRef = ObjectRef{APIVersion: "kopf.dev/v1", Kind: "ClusterThing", Name: "thing-1", UID: "uid-2"}
)

func ptr[T any](v T) *T { return &v }

// lines logs through fn with a logger of cfg and returns the output lines.
func lines(t *testing.T, cfg Config, fn func(l *slog.Logger)) []string {
	t.Helper()
	var buf bytes.Buffer
	cfg.Writer = &buf
	fn(New(cfg))
	out := strings.TrimSuffix(buf.String(), "\n")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// The full format's header (compat: logging-formats): [asctime] name-20
// [level-8] message.
var fullHeader = regexp.MustCompile(`^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] (.{20}) \[(.{8})\] (.*)$`)

// (compat: logging-formats, logging-prefix): the text formats, the prefix and
// its switches.
func TestTextFormats(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		log    func(l *slog.Logger)
		header []string // the full format's name and level columns, if full
		want   []string // messages
	}{{
		name: "plain/framework",
		cfg:  Config{Format: FormatPlain},
		log:  func(l *slog.Logger) { l.Info("Initial authentication has been initiated.") },
		want: []string{"Initial authentication has been initiated."},
	}, {
		name: "plain/object prefix by default",
		cfg:  Config{Format: FormatPlain},
		log:  func(l *slog.Logger) { WithObject(l, nsRef).Info("hello") },
		want: []string{"[default/kopf-example-1] hello"},
	}, {
		name: "plain/cluster-scoped prefix",
		cfg:  Config{Format: FormatPlain},
		log:  func(l *slog.Logger) { WithObject(l, clRef).Info("hello") },
		want: []string{"[thing-1] hello"},
	}, {
		name: "plain/no-log-prefix",
		cfg:  Config{Format: FormatPlain, Prefix: ptr(false)},
		log:  func(l *slog.Logger) { WithObject(l, nsRef).Info("hello") },
		want: []string{"hello"},
	}, {
		name:   "full/default format is full",
		cfg:    Config{},
		log:    func(l *slog.Logger) { l.Info("Initial authentication has been initiated.") },
		header: []string{"kopf                 INFO    "},
		want:   []string{"Initial authentication has been initiated."},
	}, {
		name:   "full/object",
		cfg:    Config{Format: FormatFull, Level: slog.LevelDebug},
		log:    func(l *slog.Logger) { WithObject(l, nsRef).Debug("Resuming is in progress: ...") },
		header: []string{"kopf.objects         DEBUG   "},
		want:   []string{"[default/kopf-example-1] Resuming is in progress: ..."},
	}, {
		name:   "full/no-log-prefix",
		cfg:    Config{Format: FormatFull, Prefix: ptr(false)},
		log:    func(l *slog.Logger) { WithObject(l, nsRef).Info("hello") },
		header: []string{"kopf.objects         INFO    "},
		want:   []string{"hello"},
	}, {
		name:   "full/name truncated to 20, levels",
		cfg:    Config{Format: FormatFull, Name: "kopf._core.reactor.running"},
		log:    func(l *slog.Logger) { l.Warn("w"); l.Error("e"); l.Log(nil, slog.LevelError+4, "c") },
		header: []string{"kopf._core.reactor.r WARNING ", "kopf._core.reactor.r ERROR   ", "kopf._core.reactor.r CRITICAL"},
		want:   []string{"w", "e", "c"},
	}, {
		name: "full/Named",
		cfg:  Config{Format: FormatFull},
		log: func(l *slog.Logger) {
			Named(l, "kopf.reactor.queueing").Info("m")
			Named(WithObject(l, nsRef), "x").Info("m")
		},
		header: []string{"kopf.reactor.queuein INFO    ", "x                    INFO    "},
		want:   []string{"m", "[default/kopf-example-1] m"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := lines(t, tt.cfg, tt.log)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d lines %q, want %d", len(got), got, len(tt.want))
			}
			for i, line := range got {
				msg := line
				if tt.header != nil {
					m := fullHeader.FindStringSubmatch(line)
					if m == nil {
						t.Fatalf("line %q does not match %s", line, fullHeader)
					}
					if h := m[1] + " " + m[2]; h != tt.header[i] {
						t.Errorf("header %q, want %q", h, tt.header[i])
					}
					msg = m[3]
				}
				if msg != tt.want[i] {
					t.Errorf("message %q, want %q", msg, tt.want[i])
				}
			}
		})
	}
}

// The acceptance regex of (compat: logging-formats), literally.
func TestFullFormatAcceptance(t *testing.T) {
	got := lines(t, Config{}, func(l *slog.Logger) { WithObject(l, nsRef).Info("hello") })
	re := regexp.MustCompile(`^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] .{20} \[INFO {4}\] `)
	if len(got) != 1 || !re.MatchString(got[0]) || !strings.HasSuffix(got[0], "] [default/kopf-example-1] hello") {
		t.Fatalf("got %q", got)
	}
}

// The timestamp is local time, as Python's asctime.
func TestFullFormatTime(t *testing.T) {
	var buf bytes.Buffer
	l := New(Config{Writer: &buf})
	ts := time.Date(2019, 11, 4, 17, 49, 25, 365_999_999, time.UTC)
	r := slog.NewRecord(ts, slog.LevelInfo, "m", 0)
	if err := l.Handler().Handle(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	want := "[" + ts.Local().Format("2006-01-02 15:04:05") + ",365] kopf                 [INFO    ] m\n"
	if buf.String() != want {
		t.Fatalf("got %q, want %q", buf.String(), want)
	}
}

func parseJSONLines(t *testing.T, ls []string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range ls {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

var jsonTimestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$`)

// (compat: logging-formats, logging-prefix): the json format, its refkey and prefix.
func TestJSONFormat(t *testing.T) {
	nsObj := map[string]any{"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "name": "kopf-example-1", "uid": "uid-1", "namespace": "default"}
	clObj := map[string]any{"apiVersion": "kopf.dev/v1", "kind": "ClusterThing", "name": "thing-1", "uid": "uid-2", "namespace": nil}
	tests := []struct {
		name string
		cfg  Config
		log  func(l *slog.Logger)
		want []map[string]any // without the timestamp
	}{{
		name: "framework record",
		cfg:  Config{Format: FormatJSON},
		log:  func(l *slog.Logger) { l.Info("Initial authentication has been initiated.") },
		want: []map[string]any{{"message": "Initial authentication has been initiated.", "severity": "info"}},
	}, {
		name: "object record, no prefix by default",
		cfg:  Config{Format: FormatJSON, Level: slog.LevelDebug},
		log:  func(l *slog.Logger) { WithObject(l, nsRef).Debug("Resuming is in progress: ...") },
		want: []map[string]any{{"message": "Resuming is in progress: ...", "severity": "debug", "object": nsObj}},
	}, {
		name: "cluster-scoped object: namespace null",
		cfg:  Config{Format: FormatJSON},
		log:  func(l *slog.Logger) { WithObject(l, clRef).Info("hello") },
		want: []map[string]any{{"message": "hello", "severity": "info", "object": clObj}},
	}, {
		name: "log-refkey",
		cfg:  Config{Format: FormatJSON, RefKey: "k8s-obj"},
		log:  func(l *slog.Logger) { WithObject(l, nsRef).Info("hello") },
		want: []map[string]any{{"message": "hello", "severity": "info", "k8s-obj": nsObj}},
	}, {
		name: "log-prefix",
		cfg:  Config{Format: FormatJSON, Prefix: ptr(true)},
		log:  func(l *slog.Logger) { WithObject(l, nsRef).Info("hello"); l.Info("plain") },
		want: []map[string]any{
			{"message": "[default/kopf-example-1] hello", "severity": "info", "object": nsObj},
			{"message": "plain", "severity": "info"},
		},
	}, {
		name: "severities",
		cfg:  Config{Format: FormatJSON, Level: slog.LevelDebug - 4},
		log: func(l *slog.Logger) {
			l.Log(nil, slog.LevelDebug-4, "d0")
			l.Debug("d")
			l.Log(nil, slog.LevelInfo-2, "i0")
			l.Info("i")
			l.Warn("w")
			l.Error("e")
			l.Log(nil, slog.LevelError+4, "f")
		},
		want: []map[string]any{
			{"message": "d0", "severity": "debug"},
			{"message": "d", "severity": "debug"},
			{"message": "i0", "severity": "info"},
			{"message": "i", "severity": "info"},
			{"message": "w", "severity": "warn"},
			{"message": "e", "severity": "error"},
			{"message": "f", "severity": "fatal"},
		},
	}, {
		name: "attributes are extra fields",
		cfg:  Config{Format: FormatJSON},
		log: func(l *slog.Logger) {
			l = l.With("handler", "create_fn")
			WithObject(l, nsRef).Info("creating", "spec", map[string]any{"field": "value"}, "retry", 2,
				"delay", 1500*time.Millisecond, "err", errors.New("boom"), slog.Group("g", "a", 1))
		},
		want: []map[string]any{{
			"message": "creating", "severity": "info", "object": nsObj, "handler": "create_fn",
			"spec": map[string]any{"field": "value"}, "retry": 2.0, "delay": "1.5s", "err": "boom",
			"g": map[string]any{"a": 1.0},
		}},
	}, {
		name: "groups nest",
		cfg:  Config{Format: FormatJSON},
		log: func(l *slog.Logger) {
			l.WithGroup("outer").With("a", 1).WithGroup("inner").Info("m", "b", 2)
			l.WithGroup("empty").Info("no attrs")
		},
		want: []map[string]any{
			{"message": "m", "severity": "info", "outer": map[string]any{"a": 1.0, "inner": map[string]any{"b": 2.0}}},
			{"message": "no attrs", "severity": "info"},
		},
	}, {
		name: "escaping",
		cfg:  Config{Format: FormatJSON},
		log: func(l *slog.Logger) {
			WithObject(l, ObjectRef{Name: "a\"b\\c\n\x01\xff", Namespace: "ns"}).Info("q\"\n\x02\xfe")
		},
		want: []map[string]any{{
			"message": "q\"\n\x02\ufffd", "severity": "info",
			"object": map[string]any{"apiVersion": nil, "kind": nil, "name": "a\"b\\c\n\x01\ufffd", "uid": nil, "namespace": "ns"},
		}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseJSONLines(t, lines(t, tt.cfg, tt.log))
			if len(got) != len(tt.want) {
				t.Fatalf("got %d records %v, want %d", len(got), got, len(tt.want))
			}
			for i, rec := range got {
				ts, _ := rec["timestamp"].(string)
				if !jsonTimestamp.MatchString(ts) {
					t.Errorf("timestamp %q does not match %s", ts, jsonTimestamp)
				}
				delete(rec, "timestamp")
				if g, w := fmt.Sprint(rec), fmt.Sprint(tt.want[i]); g != w {
					t.Errorf("record\n got %s\nwant %s", g, w)
				}
			}
		})
	}
}

// Keys are in python-json-logger's order: message, extras, timestamp,
// refkey, severity.
func TestJSONKeyOrder(t *testing.T) {
	got := lines(t, Config{Format: FormatJSON}, func(l *slog.Logger) {
		WithObject(l.With("a", 1), ObjectRef{Name: "n", Namespace: "ns"}).Info("m", "b", "x")
	})
	re := regexp.MustCompile(`^\{"message":"m","a":1,"b":"x","timestamp":"[^"]+","object":\{"apiVersion":null,"kind":null,"name":"n","uid":null,"namespace":"ns"\},"severity":"info"\}$`)
	if len(got) != 1 || !re.MatchString(got[0]) {
		t.Fatalf("got %q", got)
	}
}

// Attributes in the text formats: " key=value" after the message.
func TestTextAttributes(t *testing.T) {
	type uid string
	type point struct{ X, Y int }
	tests := []struct {
		name string
		log  func(l *slog.Logger)
		want string
	}{
		{"scalars", func(l *slog.Logger) {
			l.Info("m", "s", "word", "n", -3, "u", uint64(7), "f", 1.5, "b", true, "d", 90*time.Second)
		}, "m s=word n=-3 u=7 f=1.5 b=true d=1m30s"},
		{"quoting", func(l *slog.Logger) {
			l.Info("m", "sp", "two words", "eq", "a=b", "q", `say "hi"`, "empty", "", "nl", "a\nb")
		}, `m sp="two words" eq="a=b" q="say \"hi\"" empty="" nl="a\nb"`},
		{"composites as JSON", func(l *slog.Logger) {
			l.Info("creating", "spec", map[string]any{"field": "value", "items": []int{1, 2}}, "p", point{1, 2}, "l", []string{"a", "b c"})
		}, `creating spec={"field":"value","items":[1,2]} p={"X":1,"Y":2} l=["a","b c"]`},
		{"named strings as text", func(l *slog.Logger) { l.Info("m", "uid", uid("abc-1"), "nil", nil) }, "m uid=abc-1 nil=null"},
		{"errors", func(l *slog.Logger) {
			var nilErr *myErr
			l.Info("m", "err", errors.New("boom: it failed"), "nilerr", nilErr)
		}, `m err="boom: it failed" nilerr="<error: runtime error: invalid memory address or nil pointer dereference>"`},
		{"groups flatten", func(l *slog.Logger) {
			l.With("a", 1).WithGroup("g").With("b", 2).WithGroup("h").Info("m", "c", 3, slog.Group("k", "d", 4))
		}, "m a=1 g.b=2 g.h.c=3 g.h.k.d=4"},
		{"time", func(l *slog.Logger) {
			l.Info("m", "t", time.Date(2020, 12, 31, 23, 59, 59, 123456000, time.UTC))
		}, "m t=2020-12-31T23:59:59.123456Z"},
		{"with and object", func(l *slog.Logger) {
			WithObject(l.With("handler", "create_fn"), nsRef).Info("m", "retry", 1)
		}, "[default/kopf-example-1] m handler=create_fn retry=1"},
		{"empty attrs dropped", func(l *slog.Logger) {
			l.Info("m", slog.Attr{}, slog.Group("g"), "x", 1)
		}, "m x=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := lines(t, Config{Format: FormatPlain}, tt.log)
			if len(got) != 1 || got[0] != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

type myErr struct{ msg string }

func (e *myErr) Error() string { return e.msg }

// (compat: logging-levels): the level filters; Enabled agrees.
func TestLevels(t *testing.T) {
	logAll := func(l *slog.Logger) {
		l.Debug("d")
		l.Info("i")
		l.Warn("w")
		l.Error("e")
	}
	for _, tt := range []struct {
		level slog.Level
		want  string
	}{
		{slog.LevelInfo, "i w e"},
		{slog.LevelDebug, "d i w e"},
		{slog.LevelWarn, "w e"},
		{slog.LevelError, "e"},
	} {
		t.Run(tt.level.String(), func(t *testing.T) {
			got := lines(t, Config{Format: FormatPlain, Level: tt.level}, logAll)
			if strings.Join(got, " ") != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			l := New(Config{Level: tt.level, Writer: io.Discard})
			if l.Enabled(t.Context(), tt.level-1) || !l.Enabled(t.Context(), tt.level) {
				t.Errorf("Enabled disagrees with the level %v", tt.level)
			}
		})
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"": FormatFull, "plain": FormatPlain, "FULL": FormatFull, "Json": FormatJSON} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("ParseFormat(xml) is not an error")
	}
	// An unknown format in Config is the default.
	got := lines(t, Config{Format: "xml"}, func(l *slog.Logger) { l.Info("m") })
	if len(got) != 1 || !fullHeader.MatchString(got[0]) {
		t.Errorf("unknown format: got %q, want the full format", got)
	}
}

// Loggers not made by New still get the object and the name, as attributes.
func TestForeignHandler(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	Named(WithObject(l, nsRef), "x").Info("m")
	want := "level=INFO msg=m object.apiVersion=kopf.dev/v1 object.kind=KopfExample object.name=kopf-example-1 object.uid=uid-1 object.namespace=default logger=x\n"
	if buf.String() != want {
		t.Fatalf("got  %q\nwant %q", buf.String(), want)
	}
}

// Loggers are shared by goroutines: every line is written whole.
func TestConcurrent(t *testing.T) {
	for _, format := range Formats {
		t.Run(string(format), func(t *testing.T) {
			var buf bytes.Buffer
			root := New(Config{Format: format, Writer: &buf})
			const goroutines, each = 8, 200
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := range each {
						ref := ObjectRef{Name: fmt.Sprintf("obj-%d", g), Namespace: "ns"}
						WithObject(root.With("g", g), ref).Info("message", "i", i)
					}
				})
			}
			wg.Wait()
			got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
			if len(got) != goroutines*each {
				t.Fatalf("got %d lines, want %d", len(got), goroutines*each)
			}
			line := regexp.MustCompile(`\[ns/obj-(\d)\] message g=(\d) i=\d+$`)
			if format == FormatJSON {
				parseJSONLines(t, got)
				return
			}
			for _, l := range got {
				if m := line.FindStringSubmatch(l); m == nil || m[1] != m[2] {
					t.Fatalf("garbled line %q", l)
				}
			}
		})
	}
}
