package handling

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/tracing"
	"github.com/kopfgo/kopfgo/patch"
	"github.com/kopfgo/kopfgo/persistence"
)

// world simulates one object across passes: each pass's patch is applied to
// the body, as the API server would, and the fake clock moves on demand.
type world struct {
	t     *testing.T
	clock *testingclock.FakeClock
	body  map[string]any
	logs  *strings.Builder
	calls map[string]int
	// delays between the passes of untilDone
	delays []time.Duration
	// tracer, when set, is the cycles' (tracing_test.go)
	tracer *tracing.Tracer
}

func newWorld(t *testing.T) *world {
	return &world{
		t:     t,
		clock: testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		body: map[string]any{
			"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
			"metadata": map[string]any{"name": "kex", "namespace": "default", "uid": "u1"},
			"spec":     map[string]any{"field": "value"},
		},
		logs:  &strings.Builder{},
		calls: map[string]int{},
	}
}

func (w *world) handler(id string, fn func(c *handlers.Change) (any, error), opts ...func(*Handler)) *Handler {
	h := &Handler{ID: id, Reason: causes.Create}
	h.Fn = func(ctx context.Context, c *handlers.Change) (any, error) {
		w.calls[id]++
		return fn(c)
	}
	for _, o := range opts {
		o(h)
	}
	return h
}

func (w *world) pass(hs ...*Handler) (Outcome, *patch.Patch) {
	return w.passWith(false, hs...)
}

// passWith is pass with the framework's conditions on or off.
func (w *world) passWith(conditions bool, hs ...*Handler) (Outcome, *patch.Patch) {
	p := &patch.Patch{}
	c := &Cycle{
		Reason: causes.Create, Handlers: hs, Known: hs, Body: w.body, Patch: p,
		Storage: persistence.NewAnnotationsStorage(), Clock: w.clock,
		Logger:         slog.New(slog.NewTextHandler(io.MultiWriter(w.logs), nil)),
		DefaultBackoff: 60 * time.Second,
		Conditions:     conditions,
		Tracer:         w.tracer,
	}
	out := c.Run(context.Background())
	w.body = p.Apply(w.body)
	return out, p
}

func (w *world) record(id string) *persistence.Record {
	rec, err := persistence.NewAnnotationsStorage().Fetch(id, w.body)
	if err != nil {
		w.t.Fatalf("fetch %s: %v", id, err)
	}
	return rec
}

func TestSingleHandlerSucceedsInOnePass(t *testing.T) {
	w := newWorld(t)
	h := w.handler("create_fn", func(c *handlers.Change) (any, error) {
		return map[string]any{"message": "hello"}, nil
	})
	out, p := w.pass(h)
	if !out.Done || out.Succeeded != 1 || out.Failed != 0 {
		t.Fatalf("outcome = %+v, want done with 1 success", out)
	}
	if got := dicts.String(w.body, "status", "create_fn", "message"); got != "hello" {
		t.Errorf("status.create_fn.message = %q, want hello", got)
	}
	if rec := w.record("create_fn"); rec != nil {
		t.Errorf("record left after success: %+v", rec)
	}
	if v, ok := dicts.Get(p.Map(), []string{"metadata", "annotations", "kopf.zalando.org/create_fn"}); ok && v != nil {
		t.Errorf("patch stores a record although the cycle is done: %v", v)
	}
	if !strings.Contains(w.logs.String(), "Handler 'create_fn' succeeded.") ||
		!strings.Contains(w.logs.String(), "Creation is processed: 1 succeeded; 0 failed.") {
		t.Errorf("logs lack Kopf's lines:\n%s", w.logs)
	}
}

func TestTemporaryErrorIsRetriedAfterItsDelay(t *testing.T) {
	w := newWorld(t)
	h := w.handler("create_fn", func(c *handlers.Change) (any, error) {
		if c.Retry < 2 {
			return nil, &handlers.TemporaryError{Err: errors.New("not yet"), Delay: time.Second}
		}
		return c.Retry, nil
	})
	started := w.clock.Now()
	out, _ := w.pass(h)
	if out.Done || out.Delay != time.Second {
		t.Fatalf("outcome = %+v, want a 1s delay", out)
	}
	rec := w.record("create_fn")
	if rec == nil || rec.Retries != 1 || rec.Message != "not yet" || rec.Purpose != "create" ||
		!rec.Started.Equal(started) || !rec.Delayed.Equal(started.Add(time.Second)) {
		t.Fatalf("record = %+v", rec)
	}
	// Not awake yet: nothing runs.
	w.clock.Step(500 * time.Millisecond)
	if out, _ := w.pass(h); out.Ran || out.Delay != 500*time.Millisecond {
		t.Fatalf("early pass = %+v, want no run and 0.5s left", out)
	}
	w.clock.Step(500 * time.Millisecond)
	w.pass(h)
	if rec := w.record("create_fn"); rec == nil || rec.Retries != 2 || !rec.Started.Equal(started) {
		t.Fatalf("record after 2nd try = %+v", rec)
	}
	w.clock.Step(time.Second)
	out, _ = w.pass(h)
	if !out.Done || w.calls["create_fn"] != 3 {
		t.Fatalf("outcome = %+v after %d calls, want done after 3", out, w.calls["create_fn"])
	}
	if got, _ := dicts.Get(w.body, []string{"status", "create_fn"}); got != float64(2) {
		t.Errorf("status.create_fn = %v, want the retry number 2", got)
	}
}

func TestFewestRetriesFirstAndFailuresIsolated(t *testing.T) {
	w := newWorld(t)
	var order []string
	h1 := w.handler("h1", func(c *handlers.Change) (any, error) {
		order = append(order, "h1")
		if c.Retry == 0 {
			return nil, errors.New("boom")
		}
		return nil, nil
	}, func(h *Handler) { h.Backoff = time.Second })
	h2 := w.handler("h2", func(c *handlers.Change) (any, error) { order = append(order, "h2"); return nil, nil })
	h3 := w.handler("h3", func(c *handlers.Change) (any, error) { order = append(order, "h3"); return nil, nil })
	for i := 0; i < 3; i++ {
		w.pass(h1, h2, h3)
	}
	w.clock.Step(time.Second)
	out, _ := w.pass(h1, h2, h3)
	if !out.Done || strings.Join(order, ",") != "h1,h2,h3,h1" {
		t.Fatalf("order = %v, outcome %+v; want h1,h2,h3,h1 and done", order, out)
	}
}

func TestPermanentFailures(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		opts    func(*Handler)
		calls   int
		wantLog string
	}{
		{"permanent error", &handlers.PermanentError{Err: errors.New("final")}, nil, 1, "Handler 'h' failed permanently: final"},
		{"errors mode permanent", errors.New("x"), func(h *Handler) { h.Errors = handlers.ErrorsPermanent }, 1, "failed with an exception and will stop now: x"},
		{"retries exhausted", errors.New("x"), func(h *Handler) { h.Retries = 3; h.Backoff = time.Second }, 3, "would exceed 3 retries"},
		{"timeout look-ahead", &handlers.TemporaryError{Err: errors.New("x"), Delay: 2 * time.Second}, func(h *Handler) { h.Timeout = 5 * time.Second }, 3, "failed temporarily but will time out after 5 seconds: x"},
		{"timeout look-ahead of an arbitrary error", errors.New("x"), func(h *Handler) { h.Timeout = 5 * time.Second; h.Backoff = 2 * time.Second }, 3,
			"failed with an exception and will stop now (it would time out in 5 seconds on the next attempt): x"},
		{"panic", nil, func(h *Handler) { h.Errors = handlers.ErrorsPermanent }, 1, "panic: kaboom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			opts := []func(*Handler){}
			if tt.opts != nil {
				opts = append(opts, tt.opts)
			}
			h := w.handler("h", func(c *handlers.Change) (any, error) {
				if tt.err == nil {
					panic("kaboom")
				}
				return nil, tt.err
			}, opts...)
			var out Outcome
			for i := 0; i < 10 && !out.Done; i++ {
				out, _ = w.pass(h)
				w.clock.Step(out.Delay)
			}
			if !out.Done || out.Failed != 1 || w.calls["h"] != tt.calls {
				t.Fatalf("outcome %+v after %d calls, want done with 1 failure after %d", out, w.calls["h"], tt.calls)
			}
			if !strings.Contains(w.logs.String(), tt.wantLog) {
				t.Errorf("log lacks %q:\n%s", tt.wantLog, w.logs)
			}
			if _, ok := dicts.Get(w.body, []string{"status", "h"}); ok {
				t.Errorf("a failed handler delivered a result")
			}
		})
	}
}

func TestIgnoredErrorsFinishTheHandler(t *testing.T) {
	w := newWorld(t)
	h := w.handler("h", func(c *handlers.Change) (any, error) { return nil, errors.New("meh") },
		func(h *Handler) { h.Errors = handlers.ErrorsIgnored })
	out, _ := w.pass(h)
	if !out.Done || out.Failed != 0 || w.calls["h"] != 1 {
		t.Fatalf("outcome = %+v", out)
	}
}

func TestStaleRecordsOfASupersededCauseAreIgnored(t *testing.T) {
	w := newWorld(t)
	delayed := w.clock.Now().Add(time.Hour)
	store := persistence.NewAnnotationsStorage()
	p := &patch.Patch{}
	store.Store("h", &persistence.Record{Purpose: "update", Retries: 5, Delayed: &delayed}, w.body, p)
	w.body = p.Apply(w.body)
	h := w.handler("h", func(c *handlers.Change) (any, error) {
		if c.Retry != 0 {
			t.Errorf("retry = %d, want a fresh start", c.Retry)
		}
		return nil, nil
	})
	if out, _ := w.pass(h); !out.Done {
		t.Fatalf("outcome = %+v", out)
	}
	if w.record("h") != nil {
		t.Errorf("stale record not purged")
	}
}

func TestCorruptRecordIsWarnedAndHandled(t *testing.T) {
	w := newWorld(t)
	dicts.Set(w.body, []string{"metadata", "annotations"}, map[string]any{"kopf.zalando.org/h": "{not json"})
	h := w.handler("h", func(c *handlers.Change) (any, error) { return nil, nil })
	out, _ := w.pass(h)
	if !out.Done || w.calls["h"] != 1 {
		t.Fatalf("outcome = %+v", out)
	}
	if !strings.Contains(w.logs.String(), "level=WARN") || !strings.Contains(w.logs.String(), "kopf.zalando.org/h") {
		t.Errorf("no warning naming the key:\n%s", w.logs)
	}
}

// A cause without handlers (a resume with none registered, for every object
// found at start-up) is done at once and, as in Kopf, not logged (compat: logging-lines);
// stale records of the resource's handlers are still purged.
func TestCycleWithoutHandlersIsDoneSilently(t *testing.T) {
	w := newWorld(t)
	w.body["metadata"].(map[string]any)["annotations"] = map[string]any{
		"kopf.zalando.org/create_fn": `{"started":"2026-01-02T03:04:05.000000+00:00","purpose":"create","retries":1}`,
	}
	stale := w.handler("create_fn", func(c *handlers.Change) (any, error) { return nil, nil })
	p := &patch.Patch{}
	c := &Cycle{
		Reason: causes.Resume, Known: []*Handler{stale}, Body: w.body, Patch: p,
		Storage: persistence.NewAnnotationsStorage(), Clock: w.clock,
		Logger: slog.New(slog.NewTextHandler(w.logs, nil)),
	}
	out := c.Run(context.Background())
	if !out.Done || out.Ran {
		t.Errorf("outcome = %+v, want done without a call", out)
	}
	if strings.Contains(w.logs.String(), "is processed") {
		t.Errorf("logged %q for a cause without handlers", w.logs.String())
	}
	if v, ok := p.Annotations()["kopf.zalando.org/create_fn"]; !ok || v != nil {
		t.Errorf("stale record not purged: patch %v", p.Map())
	}
}

// TestSupersededCauseIsReportedAsKopf: a creation left unfinished when the
// object is deleted is reported in Kopf's words, with the counts of its
// records, and its handlers start afresh for the deletion.
func TestSupersededCauseIsReportedAsKopf(t *testing.T) {
	w := newWorld(t)
	first := w.handler("a", func(c *handlers.Change) (any, error) { return nil, nil })
	second := w.handler("b", func(c *handlers.Change) (any, error) { return nil, nil })
	if out, _ := w.pass(first, second); out.Done {
		t.Fatal("the creation is done in one pass; the test needs it unfinished")
	}
	p := &patch.Patch{}
	c := &Cycle{
		Reason: causes.Delete, Handlers: []*Handler{first, second}, Known: []*Handler{first, second}, Body: w.body, Patch: p,
		Storage: persistence.NewAnnotationsStorage(), Clock: w.clock,
		Logger: slog.New(slog.NewTextHandler(w.logs, nil)), DefaultBackoff: 60 * time.Second,
	}
	c.Run(context.Background())
	if want := "Creation is superseded by deletion: 1 succeeded; 0 failed; 0 left to the moment."; !strings.Contains(w.logs.String(), want) {
		t.Errorf("no %q in:\n%s", want, w.logs)
	}
}

// briefConditions renders a patch's waiting condition changes as
// "Type=Status/Reason" or "-Type".
func briefConditions(p *patch.Patch) string {
	var out []string
	for _, ch := range p.Conditions() {
		if ch.Remove {
			out = append(out, "-"+ch.Type)
			continue
		}
		out = append(out, ch.Type+"="+ch.Status+"/"+ch.Reason)
	}
	return strings.Join(out, " ")
}

// With Conditions, each pass of the cycle leaves the framework's
// conditions for its state in the patch, once (not again for the
// sub-handlers' cycles), next to what the handlers set themselves; without,
// only the handlers' own.
func TestCycleSetsConditionsForItsState(t *testing.T) {
	w := newWorld(t)
	parent := w.handler("parent", func(c *handlers.Change) (any, error) { return nil, nil })
	parent.Fn = func(ctx context.Context, c *handlers.Change) (any, error) {
		c.SetCondition(metav1.Condition{Type: "Synced", Status: metav1.ConditionFalse, Reason: "Trying"})
		return nil, Execute(ctx, map[string]handlers.ChangeFunc{"child": func(context.Context, *handlers.Change) (any, error) {
			return nil, &handlers.TemporaryError{Err: errors.New("not yet"), Delay: time.Second}
		}})
	}
	if _, p := w.passWith(true, parent); briefConditions(p) != "Synced=False/Trying Ready=False/HandlersPending Reconciling=True/HandlersPending -Stalled" {
		t.Errorf("after a pass with a sub-handler retrying: %s", briefConditions(p))
	}

	w = newWorld(t)
	h := w.handler("create_fn", func(c *handlers.Change) (any, error) {
		if c.Retry == 0 {
			return nil, &handlers.TemporaryError{Err: errors.New("not yet"), Delay: time.Second}
		}
		return nil, &handlers.PermanentError{Err: errors.New("boom")}
	})
	_, p := w.passWith(true, h)
	if got, want := briefConditions(p), "Ready=False/HandlerRetrying Reconciling=True/HandlerRetrying -Stalled"; got != want {
		t.Errorf("after a temporary error:\n got %s\nwant %s", got, want)
	}
	w.clock.Step(time.Second)
	out, p := w.passWith(true, h)
	if got, want := briefConditions(p), "Ready=False/HandlerFailed -Reconciling Stalled=True/HandlerFailed"; !out.Done || got != want {
		t.Fatalf("after the permanent failure (done %v):\n got %s\nwant %s", out.Done, got, want)
	}
	if msg := p.Conditions()[2].Message; msg != "Handler 'create_fn' failed for good: boom" {
		t.Errorf("Stalled's message: %q", msg)
	}

	w = newWorld(t)
	h = w.handler("create_fn", func(c *handlers.Change) (any, error) {
		c.SetCondition(metav1.Condition{Type: "Synced", Status: metav1.ConditionTrue, Reason: "Done"})
		return nil, nil
	})
	if _, p := w.passWith(false, h); briefConditions(p) != "Synced=True/Done" {
		t.Errorf("without conditions: %s, want the handler's own only", briefConditions(p))
	}
}
