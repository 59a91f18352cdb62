package posting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/logging"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClient records the events posted; fail, when set, decides the error
// of the n-th post (from 0).
type fakeClient struct {
	mu     sync.Mutex
	posted []posted
	calls  int
	fail   func(n int) error
	// each, if set, is told of every successful post.
	each chan struct{}
}

type posted struct {
	namespace string
	body      map[string]any
}

func (c *fakeClient) PostEvent(_ context.Context, ns string, body map[string]any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.calls
	c.calls++
	if c.fail != nil {
		if err := c.fail(n); err != nil {
			return err
		}
	}
	c.posted = append(c.posted, posted{ns, body})
	if c.each != nil {
		c.each <- struct{}{}
	}
	return nil
}

func (c *fakeClient) all() []posted {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]posted(nil), c.posted...)
}

// logBuf collects the poster's own log lines.
type logBuf struct {
	mu sync.Mutex
	sb strings.Builder
}

func (b *logBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.Write(p)
}

func (b *logBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.String()
}

var kex = Ref{APIVersion: "kopf.dev/v1", Kind: "KopfExample", Name: "kopf-example-1", UID: "uid-1", Namespace: "ns1"}

// drain runs the poster until everything queued so far is posted: Run
// flushes the queue when its ctx ends, so no sleeping is needed.
func drain(p *Poster) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.Run(ctx)
}

func newPoster(s config.Posting, c *fakeClient, log *logBuf) *Poster {
	cfg := Config{Client: c, Settings: config.Settings{Posting: s}.WithDefaults().Posting,
		Clock: testingclock.NewFakePassiveClock(time.Date(2026, 1, 28, 18, 25, 3, 123456789, time.FixedZone("X", 3600)))}
	if log != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
	}
	return New(cfg)
}

// (compat: events-shape): the event's shape is Kopf's.
func TestEventShape(t *testing.T) {
	c := &fakeClient{}
	p := newPoster(config.Posting{}, c, nil)
	if err := p.Info(kex, "SomeReason", "Some message"); err != nil {
		t.Fatal(err)
	}
	drain(p)
	got := c.all()
	if len(got) != 1 {
		t.Fatalf("%d events posted, want 1", len(got))
	}
	ts := "2026-01-28T17:25:03.123456Z"
	want := map[string]any{
		"metadata":           map[string]any{"namespace": "ns1", "generateName": "kopf-event-"},
		"action":             "Action?",
		"type":               "Normal",
		"reason":             "SomeReason",
		"message":            "Some message",
		"reportingComponent": "kopf",
		"reportingInstance":  "dev",
		"source":             map[string]any{"component": "kopf"},
		"involvedObject": map[string]any{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
			"name": "kopf-example-1", "uid": "uid-1", "namespace": "ns1"},
		"firstTimestamp": ts, "lastTimestamp": ts, "eventTime": ts,
	}
	if g, w := fmt.Sprint(got[0].body), fmt.Sprint(want); g != w {
		t.Errorf("event body:\n got %s\nwant %s", g, w)
	}
	if got[0].namespace != "ns1" {
		t.Errorf("posted to namespace %q, want the object's ns1", got[0].namespace)
	}
}

// (compat: events-shape): events about cluster-scoped objects go to the credentials'
// default namespace, else "default"; the involvedObject gets it too, as the
// API requires.
func TestClusterScopedObjectsNamespace(t *testing.T) {
	node := Ref{APIVersion: "v1", Kind: "Node", Name: "node-1", UID: "uid-n"}
	for _, tc := range []struct{ configured, want string }{{"", "default"}, {"team-a", "team-a"}} {
		c := &fakeClient{}
		p := New(Config{Client: c, Namespace: tc.configured, Settings: config.Settings{}.WithDefaults().Posting})
		if err := p.Warn(node, "R", "m"); err != nil {
			t.Fatal(err)
		}
		drain(p)
		got := c.all()
		if len(got) != 1 || got[0].namespace != tc.want {
			t.Fatalf("configured %q: posted %+v, want one event in %q", tc.configured, got, tc.want)
		}
		inv := got[0].body["involvedObject"].(map[string]any)
		if inv["namespace"] != tc.want || inv["kind"] != "Node" {
			t.Errorf("involvedObject = %v, want the node in namespace %q", inv, tc.want)
		}
		if got[0].body["metadata"].(map[string]any)["namespace"] != tc.want {
			t.Errorf("metadata = %v, want namespace %q", got[0].body["metadata"], tc.want)
		}
	}
}

// (compat: events-gates, events-shortcuts): Disabled gates everything; the
// level gates Info, Warn and Exception but not Event.
func TestGates(t *testing.T) {
	calls := []struct {
		name string
		call func(p *Poster) error
		typ  string
	}{
		{"event", func(p *Poster) error { return p.Event(kex, "SomeType", "R", "m") }, "SomeType"},
		{"info", func(p *Poster) error { return p.Info(kex, "R", "m") }, "Normal"},
		{"warn", func(p *Poster) error { return p.Warn(kex, "R", "m") }, "Warning"},
		{"exception", func(p *Poster) error { return p.Exception(kex, "R", "m", errors.New("x")) }, "Error"},
	}
	for _, tc := range []struct {
		name     string
		settings config.Posting
		want     []string // the types posted, in call order
	}{
		{"defaults", config.Posting{}, []string{"SomeType", "Normal", "Warning", "Error"}},
		{"debug", config.Posting{Level: slog.LevelDebug}, []string{"SomeType", "Normal", "Warning", "Error"}},
		{"warning", config.Posting{Level: slog.LevelWarn}, []string{"SomeType", "Warning", "Error"}},
		{"error", config.Posting{Level: slog.LevelError}, []string{"SomeType", "Error"}},
		{"above error", config.Posting{Level: slog.LevelError + 1}, []string{"SomeType"}},
		{"disabled", config.Posting{Disabled: true}, nil},
		{"disabled at debug", config.Posting{Disabled: true, Level: slog.LevelDebug}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &fakeClient{}
			p := newPoster(tc.settings, c, nil)
			for _, call := range calls {
				if err := call.call(p); err != nil {
					t.Fatalf("%s: %v", call.name, err)
				}
			}
			drain(p)
			var types []string
			for _, e := range c.all() {
				types = append(types, e.body["type"].(string))
			}
			if fmt.Sprint(types) != fmt.Sprint(tc.want) {
				t.Errorf("posted types %v, want %v", types, tc.want)
			}
		})
	}
}

// (compat: events-not-about-events): no events about events, silently, whatever
// posts them.
func TestNoEventsAboutEvents(t *testing.T) {
	c := &fakeClient{}
	p := newPoster(config.Posting{Loggers: true}, c, nil)
	ev := Ref{APIVersion: "v1", Kind: "Event", Name: "kopf-event-x", UID: "u", Namespace: "ns1"}
	for _, err := range []error{
		p.Event(ev, "T", "R", "m"), p.Info(ev, "R", "m"), p.Warn(ev, "R", "m"), p.Exception(ev, "R", "m", nil),
	} {
		if err != nil {
			t.Errorf("posting about an event: %v, want a silent skip", err)
		}
	}
	p.Logger(slog.New(slog.DiscardHandler), ev).Error("about an event")
	// Events of other groups are other kinds of objects: they get events.
	other := Ref{APIVersion: "events.k8s.io/v1", Kind: "Event", Name: "e", Namespace: "ns1"}
	if err := p.Info(other, "R", "m"); err != nil {
		t.Fatal(err)
	}
	drain(p)
	if got := c.all(); len(got) != 1 || got[0].body["involvedObject"].(map[string]any)["apiVersion"] != "events.k8s.io/v1" {
		t.Errorf("posted %+v, want only the event about the events.k8s.io object", got)
	}
}

// (compat: events-shortcuts): Exception's reason defaults to the error's type,
// its message is "<message> <error>".
func TestException(t *testing.T) {
	for _, tc := range []struct {
		name            string
		reason, message string
		err             error
		wantReason      string
		wantMessage     string
	}{
		{"all given", "SomeReason", "Some exception:", errors.New("Exception text."), "SomeReason", "Some exception: Exception text."},
		{"exported error type", "", "Failed:", &ExportedError{}, "ExportedError", "Failed: exported"},
		{"anonymous error type", "", "", fmt.Errorf("wrapped: %w", errors.New("inner")), "Error", "wrapped: inner"},
		{"no error", "R", "only the message", nil, "R", "only the message"},
		{"no error, no reason", "", "m", nil, "Error", "m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &fakeClient{}
			p := newPoster(config.Posting{}, c, nil)
			if err := p.Exception(kex, tc.reason, tc.message, tc.err); err != nil {
				t.Fatal(err)
			}
			drain(p)
			got := c.all()
			if len(got) != 1 {
				t.Fatalf("%d events, want 1", len(got))
			}
			if r, m := got[0].body["reason"], got[0].body["message"]; r != tc.wantReason || m != tc.wantMessage {
				t.Errorf("reason %q message %q, want %q %q", r, m, tc.wantReason, tc.wantMessage)
			}
		})
	}
}

type testError struct{ s string }

func (e *testError) Error() string { return e.s }

func TestTypeName(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, "Error"},
		{errors.New("x"), "Error"},
		{&testError{}, "Error"}, // unexported: not a name to show
		{&ExportedError{}, "ExportedError"},
		{ExportedValueError{}, "ExportedValueError"},
	} {
		if got := TypeName(tc.err); got != tc.want {
			t.Errorf("TypeName(%T) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

type ExportedError struct{}

func (*ExportedError) Error() string { return "exported" }

type ExportedValueError struct{}

func (ExportedValueError) Error() string { return "exported value" }

// (compat: events-shape): long messages keep Kopf's head and tail; the API's
// limit is never exceeded, even with multi-byte characters, and no rune is
// split.
func TestTruncate(t *testing.T) {
	ascii := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteByte(byte('a' + i%26))
		}
		return b.String()
	}
	for _, msg := range []string{"", "short", ascii(1023), ascii(1024)} {
		if got := Truncate(msg); got != msg {
			t.Errorf("Truncate of %d bytes changed it to %d bytes", len(msg), len(got))
		}
	}
	for _, n := range []int{1025, 5000} {
		msg := ascii(n)
		got := Truncate(msg)
		// Kopf: message[:1024//2 - 3//2] + '...' + message[-1024//2 + (3 - 3//2):]
		if want := msg[:511] + "..." + msg[n-510:]; got != want {
			t.Errorf("Truncate of %d ASCII bytes:\n got %q\nwant %q", n, got, want)
		}
	}
	multi := strings.Repeat("ж", 3000) // 2 bytes each
	got := Truncate(multi)
	if len(got) > MaxMessageLength || !utf8.ValidString(got) || !strings.Contains(got, "...") {
		t.Errorf("Truncate of multi-byte text: %d bytes, valid UTF-8 %v, %q", len(got), utf8.ValidString(got), got)
	}
}

// (compat: events-background): a failed post is a warning, and the next events
// still go out.
func TestFailedPostIsLoggedAndSkipped(t *testing.T) {
	c := &fakeClient{fail: func(n int) error {
		if n == 0 {
			return errors.New("events is forbidden")
		}
		return nil
	}}
	log := &logBuf{}
	p := newPoster(config.Posting{}, c, log)
	for _, r := range []string{"First", "Second"} {
		if err := p.Info(kex, r, "m"); err != nil {
			t.Fatal(err)
		}
	}
	drain(p)
	if got := c.all(); len(got) != 1 || got[0].body["reason"] != "Second" {
		t.Errorf("posted %+v, want only the second event", got)
	}
	if s := log.String(); !strings.Contains(s, "Failed to post an event. Ignoring and continuing.") || !strings.Contains(s, "events is forbidden") {
		t.Errorf("log %q, want the failure with its cause", s)
	}
}

// Events queued while the poster runs are posted without stopping it; after
// it stops, posting is refused with ErrStopped.
func TestRunPostsUntilStopped(t *testing.T) {
	c := &fakeClient{each: make(chan struct{}, 3)}
	p := newPoster(config.Posting{}, c, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	for i := range 3 {
		if err := p.Info(kex, fmt.Sprintf("R%d", i), "m"); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		select {
		case <-c.each:
		case <-time.After(30 * time.Second): // a failure detector
			t.Fatalf("%d events posted while running, want 3", len(c.all()))
		}
	}
	if n := len(c.all()); n != 3 {
		t.Fatalf("%d events posted while running, want 3", n)
	}
	cancel()
	<-done
	if err := p.Info(kex, "R", "m"); !errors.Is(err, ErrStopped) {
		t.Errorf("posting after stop: %v, want ErrStopped", err)
	}
}

// The queue is bounded: a flood is cut, counted and reported, and what was
// queued is posted.
func TestQueueBound(t *testing.T) {
	c := &fakeClient{}
	log := &logBuf{}
	p := newPoster(config.Posting{}, c, log)
	for range maxQueued + 5 {
		if err := p.Info(kex, "R", "m"); err != nil {
			t.Fatal(err)
		}
	}
	drain(p)
	if n := len(c.all()); n != maxQueued {
		t.Errorf("%d events posted, want the %d queued", n, maxQueued)
	}
	if s := log.String(); !strings.Contains(s, "5 events were dropped") {
		t.Errorf("log %q, want the count of dropped events", s)
	}
}

func TestInvalidEvents(t *testing.T) {
	p := newPoster(config.Posting{}, &fakeClient{}, nil)
	if err := p.Info(kex, "", "m"); err == nil || !strings.Contains(err.Error(), "reason") {
		t.Errorf("no reason: %v, want an error saying a reason is required", err)
	}
	if err := p.Info(Ref{Kind: "Pod", Namespace: "ns"}, "R", "m"); err == nil {
		t.Error("an object without name or uid: no error")
	}
	drain(p)
}

// (compat: events-loggers): with Loggers on, object-logger messages at or above the level
// become events with reason Logging and a type by level, independent of the
// log's own level; off, the logger is returned as is.
func TestLoggerPosting(t *testing.T) {
	base := slog.New(slog.NewTextHandler(&logBuf{}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	off := newPoster(config.Posting{}, &fakeClient{}, nil)
	if off.Logger(base, kex) != base {
		t.Error("with Loggers off, Logger wrapped the logger")
	}
	drain(off)

	c := &fakeClient{}
	written := &logBuf{}
	p := newPoster(config.Posting{Loggers: true}, c, nil)
	l := p.Logger(slog.New(slog.NewTextHandler(written, &slog.HandlerOptions{Level: slog.LevelWarn})), kex).With("k", "v")
	l.Debug("debug message")
	l.Info("info message")
	l.Warn("warn message")
	l.Error("error message")
	drain(p)
	var got []string
	for _, e := range c.all() {
		got = append(got, fmt.Sprintf("%s/%s/%s", e.body["type"], e.body["reason"], e.body["message"]))
	}
	want := []string{"Normal/Logging/info message", "Warning/Logging/warn message", "Error/Logging/error message"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("posted %v, want %v", got, want)
	}
	if s := written.String(); strings.Contains(s, "info message") || !strings.Contains(s, "warn message") || !strings.Contains(s, "k=v") {
		t.Errorf("written %q, want the log's own level and attributes kept", s)
	}
}

// (compat: logging-filters): a message that the logger's filter drops is
// neither written nor posted; the others are both.
func TestLoggerPostingIsFiltered(t *testing.T) {
	c := &fakeClient{}
	written := &logBuf{}
	p := newPoster(config.Posting{Loggers: true}, c, nil)
	var filter logging.FilterVar
	filter.Set(func(logger string, r slog.Record) bool {
		return logger != logging.ObjectsName || !strings.Contains(r.Message, "secret")
	})
	base := logging.WithFilter(logging.New(logging.Config{Format: logging.FormatPlain, Writer: written}), &filter)
	l := p.Logger(logging.WithObject(base, logging.ObjectRef(kex)), kex)
	l.Info("the secret is 42")
	l.Info("public message")
	drain(p)
	var got []string
	for _, e := range c.all() {
		got = append(got, fmt.Sprint(e.body["message"]))
	}
	if want := []string{"public message"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("posted %q, want %q", got, want)
	}
	if s, want := written.String(), "[ns1/kopf-example-1] public message\n"; s != want {
		t.Errorf("written %q, want %q", s, want)
	}
}

func TestLevelType(t *testing.T) {
	for _, tc := range []struct {
		l    slog.Level
		want string
	}{
		{slog.LevelDebug - 1, "Debug"}, {slog.LevelDebug, "Debug"}, {slog.LevelDebug + 1, "Normal"},
		{slog.LevelInfo, "Normal"}, {slog.LevelInfo + 1, "Warning"}, {slog.LevelWarn, "Warning"},
		{slog.LevelError, "Error"}, {slog.LevelError + 1, "Fatal"},
	} {
		if got := LevelType(tc.l); got != tc.want {
			t.Errorf("LevelType(%v) = %q, want %q", tc.l, got, tc.want)
		}
	}
}

// blockingClient holds each post until released, failing it if its ctx ends
// first.
type blockingClient struct {
	fakeClient
	entered chan struct{}
	release chan struct{}
}

func (c *blockingClient) PostEvent(ctx context.Context, ns string, body map[string]any) error {
	c.entered <- struct{}{}
	select {
	case <-c.release:
		return c.fakeClient.PostEvent(ctx, ns, body)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A post under way when the operator stops is not cut short: the event
// would be lost.
func TestStopDoesNotCancelAPostUnderWay(t *testing.T) {
	c := &blockingClient{entered: make(chan struct{}), release: make(chan struct{})}
	log := &logBuf{}
	p := New(Config{Client: c, Settings: config.Settings{}.WithDefaults().Posting, Logger: slog.New(slog.NewTextHandler(log, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	if err := p.Info(kex, "R", "m"); err != nil {
		t.Fatal(err)
	}
	<-c.entered
	cancel()
	close(c.release)
	<-done
	if n := len(c.all()); n != 1 {
		t.Errorf("%d events posted, want the one under way when stopping; log: %s", n, log)
	}
}

// BenchmarkInfo measures what a handler pays per event: the gates and the
// queueing (the post itself happens in the background).
func BenchmarkInfo(b *testing.B) {
	p := newPoster(config.Posting{}, &fakeClient{}, nil)
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Info(kex, "SomeReason", "Some message"); err != nil {
			b.Fatal(err)
		}
		p.mu.Lock()
		p.queue = p.queue[:0]
		p.mu.Unlock()
	}
}

func BenchmarkTruncate(b *testing.B) {
	msg := strings.Repeat("0123456789", 500)
	b.ReportAllocs()
	for b.Loop() {
		_ = Truncate(msg)
	}
}
