package inspect

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// obj builds a body with annotations and a spec.
func obj(annotations map[string]any, extra map[string]any) map[string]any {
	meta := map[string]any{"name": "o", "namespace": "ns", "annotations": annotations}
	for k, v := range extra {
		meta[k] = v
	}
	return map[string]any{"metadata": meta, "spec": map[string]any{"x": int64(1)}}
}

const handled = `{"spec":{"x":1}}` + "\n"

func TestAnalyzeStates(t *testing.T) {
	cases := []struct {
		name        string
		annotations map[string]any
		state       string
		handler     string
		stuck       bool
	}{
		{"fresh", nil, Fresh, "", false},
		{"done", map[string]any{"kopf.zalando.org/last-handled-configuration": handled}, Done, "", false},
		{"changed", map[string]any{"kopf.zalando.org/last-handled-configuration": `{"spec":{"x":2}}`}, Changed, "", false},
		{"in progress (as Kopf writes it)", map[string]any{
			"kopf.zalando.org/create_fn": `{"started":"2026-11-23T11:59:00.000000","purpose":"create","retries":0,"success":false,"failure":false}`,
		}, InProgress, HandlerRunning, false},
		{"delayed", map[string]any{
			"kopf.zalando.org/create_fn": `{"started":"2026-11-23T11:59:00.000000","delayed":"2026-11-23T12:01:00.000000","purpose":"create","retries":2,"success":false,"failure":false,"message":"not yet"}`,
		}, Delayed, HandlerDelayed, false},
		{"delayed for long", map[string]any{
			"kopf.zalando.org/create_fn": `{"started":"2026-11-23T11:59:00.000000","delayed":"2026-11-23T13:00:00.000000","purpose":"create","retries":2,"success":false,"failure":false}`,
		}, Delayed, HandlerDelayed, true},
		{"retrying", map[string]any{
			"kopf.zalando.org/create_fn": `{"started":"2026-11-23T11:59:00.000000","delayed":"2026-11-23T11:59:30.000000","purpose":"create","retries":1,"success":false,"failure":false}`,
		}, InProgress, HandlerRetrying, false},
		{"failed", map[string]any{
			"kopf.zalando.org/create_fn": `{"started":"2026-11-23T11:59:00.000000","stopped":"2026-11-23T11:59:01.000000","purpose":"create","retries":1,"success":false,"failure":true,"message":"boom"}`,
		}, Failed, HandlerFailed, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := Analyze(obj(c.annotations, nil), now, Options{})
			if o.State != c.state || o.Stuck != c.stuck {
				t.Fatalf("state %q stuck %v (%s), want %q stuck %v", o.State, o.Stuck, o.Why, c.state, c.stuck)
			}
			if c.handler == "" {
				if len(o.Handlers) != 0 {
					t.Fatalf("handlers %+v, want none", o.Handlers)
				}
				return
			}
			if len(o.Handlers) != 1 || o.Handlers[0].State != c.handler || o.Handlers[0].ID != "create_fn" || o.Cause != "create" {
				t.Fatalf("handlers %+v cause %q, want create_fn %s for create", o.Handlers, o.Cause, c.handler)
			}
		})
	}
}

func TestAnalyzeStatusRecordsAndFinalizer(t *testing.T) {
	body := obj(nil, map[string]any{
		"finalizers":        []any{"kopf.zalando.org/KopfFinalizerMarker"},
		"deletionTimestamp": "2026-11-23T11:00:00Z",
	})
	body["status"] = map[string]any{"kopf": map[string]any{"progress": map[string]any{
		"delete_fn": map[string]any{"started": "2026-11-23T11:00:00.000000", "purpose": "delete", "retries": int64(3), "success": false, "failure": false},
	}}}
	o := Analyze(body, now, Options{})
	if !o.Finalizer || !o.Deleting || len(o.Handlers) != 1 || o.Handlers[0].Storage != "status" || o.Cause != "delete" || !o.Stuck {
		t.Fatalf("got %+v", o)
	}
}

func TestAnalyzeCorrupt(t *testing.T) {
	o := Analyze(obj(map[string]any{"kopf.zalando.org/fn": "{not json"}, nil), now, Options{})
	if len(o.Problems) != 1 || !strings.Contains(o.Problems[0], "kopf.zalando.org/fn") {
		t.Fatalf("problems %q", o.Problems)
	}
}

func TestOutputs(t *testing.T) {
	objs := []Object{
		Analyze(obj(nil, nil), now, Options{}),
		Analyze(obj(map[string]any{
			"kopf.zalando.org/create_fn": `{"started":"2026-11-23T11:59:00.000000","delayed":"2026-11-23T12:01:00.000000","purpose":"create","retries":2,"success":false,"failure":false,"message":"not yet"}`,
		}, nil), now, Options{}),
	}
	var b bytes.Buffer
	if err := Table(&b, objs, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "fresh") || !strings.Contains(lines[2], "2026-11-23T12:01:00Z (in 1m0s)") || !strings.Contains(lines[2], "not yet") {
		t.Fatalf("table:\n%s", b.String())
	}
	js, err := JSON(objs)
	if err != nil {
		t.Fatal(err)
	}
	var back []map[string]any
	if err := json.Unmarshal(js, &back); err != nil || len(back) != 2 || back[1]["state"] != Delayed {
		t.Fatalf("json %s: %v", js, err)
	}
}

// An operator with a field handler on a status field keeps that field in
// its diff-base: inspect must compare it, not report every such object as
// changed, and must still see a change of it.
func TestAnalyzeDiffBaseWithWatchedStatusFields(t *testing.T) {
	base := `{"spec":{"x":1},"status":{"phase":"Ready","nested":{"count":2}}}` + "\n"
	body := func(phase string) map[string]any {
		b := obj(map[string]any{"kopf.zalando.org/last-handled-configuration": base}, nil)
		b["status"] = map[string]any{"phase": phase, "nested": map[string]any{"count": int64(2), "other": "not watched"}, "unwatched": "x"}
		return b
	}
	if o := Analyze(body("Ready"), now, Options{}); o.State != Done || o.Pending {
		t.Errorf("unchanged watched status: state %q pending %v, want %q and no pending change", o.State, o.Pending, Done)
	}
	if o := Analyze(body("Failed"), now, Options{}); o.State != Changed || !o.Pending {
		t.Errorf("changed watched status: state %q pending %v, want %q and a pending change", o.State, o.Pending, Changed)
	}
}

// A permanent failure whose cycle has ended (its records purged) is read
// from the Stalled condition the framework left: the object is failed and
// stuck, naming the handler; a newer change, or a Stalled of another
// meaning, does not count.
func TestAnalyzeFailureAfterTheCycleEnded(t *testing.T) {
	stalled := func(reason, msg string) map[string]any {
		return map[string]any{"type": "Stalled", "status": "True", "reason": reason, "message": msg, "lastTransitionTime": "2026-11-23T11:59:01Z", "observedGeneration": int64(1)}
	}
	cases := []struct {
		name       string
		lastHanded string
		condition  map[string]any
		state      string
		handlers   []string
	}{
		{"failed for good", handled, stalled("HandlerFailed", "Handler 'create_fn' failed for good: boom\nHandler 'other' failed for good: bang"), Failed, []string{"create_fn: boom", "other: bang"}},
		{"changed since: a new cycle is due", `{"spec":{"x":2}}` + "\n", stalled("HandlerFailed", "Handler 'create_fn' failed for good: boom"), Changed, nil},
		{"a Stalled of the handlers' own", handled, stalled("QuotaExceeded", "Handler 'x' failed for good: y"), Done, nil},
		{"no conditions (turned off): done, as before", handled, nil, Done, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := obj(map[string]any{"kopf.zalando.org/last-handled-configuration": c.lastHanded}, nil)
			if c.condition != nil {
				body["status"] = map[string]any{"conditions": []any{c.condition}}
			}
			o := Analyze(body, now, Options{})
			if o.State != c.state || o.Stuck != (c.state == Failed) {
				t.Fatalf("state %q stuck %v (%s), want %q", o.State, o.Stuck, o.Why, c.state)
			}
			var got []string
			for _, h := range o.Handlers {
				if h.State != HandlerFailed || h.Storage != "conditions" {
					t.Errorf("handler %+v, want failed, from conditions", h)
				}
				got = append(got, h.ID+": "+h.Message)
			}
			if strings.Join(got, ";") != strings.Join(c.handlers, ";") {
				t.Errorf("handlers %q, want %q", got, c.handlers)
			}
			if c.state == Failed && o.Why != "handler create_fn failed: boom" {
				t.Errorf("why %q", o.Why)
			}
		})
	}
}
