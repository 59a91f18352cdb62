package persistence

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/patch"
)

// How the status storage holds records: plain objects, as the API server
// returns them after Kopf stored them (nulls pruned, numbers as JSON numbers).
var delayedStatus = map[string]any{
	"started": "2026-01-02T03:04:05.123456+00:00",
	"delayed": "2026-01-02T03:04:35.123456+00:00",
	"purpose": "create",
	"retries": float64(1),
	"success": false,
	"failure": false,
	"message": "Not ready yet.",
}

func withStatus(path string, v any) map[string]any {
	body := map[string]any{}
	dicts.Set(body, strings.Split(path, "."), v)
	return body
}

func TestStatusPaths(t *testing.T) {
	for _, tc := range []struct {
		name        string
		s           *StatusStorage
		field, hook string
	}{
		{"explicit defaults", &StatusStorage{Name: "kopf", Field: "status.{name}.progress", TouchField: "status.{name}.dummy"}, "status.kopf.progress", "status.kopf.dummy"},
		{"zero value", &StatusStorage{}, "status.kopf.progress", "status.kopf.dummy"},
		{"name", &StatusStorage{Name: "my-operator"}, "status.my-operator.progress", "status.my-operator.dummy"},
		{"fields", &StatusStorage{Field: "status.my-operator", TouchField: "status.my-dummy"}, "status.my-operator", "status.my-dummy"},
		{"legacy layout", &StatusStorage{Field: "status.kopf.progress"}, "status.kopf.progress", "status.kopf.dummy"},
	} {
		if got := strings.Join(tc.s.fieldPath(), "."); got != tc.field {
			t.Errorf("%s: field %q, want %q", tc.name, got, tc.field)
		}
		if got := strings.Join(tc.s.touchPath(), "."); got != tc.hook {
			t.Errorf("%s: touch field %q, want %q", tc.name, got, tc.hook)
		}
	}
}

func TestStatusFetch(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *StatusStorage
		id   string
		body map[string]any
		want *Record
	}{
		{"empty body", &StatusStorage{}, "create_fn", map[string]any{}, nil},
		{"no such handler", &StatusStorage{}, "create_fn", withStatus("status.kopf.progress", map[string]any{"other": delayedStatus}), nil},
		{"found", &StatusStorage{}, "create_fn", withStatus("status.kopf.progress", map[string]any{"create_fn": delayedStatus}), &delayedRecord},
		{"verbatim sub-handler id", &StatusStorage{}, "create_fn/sub1", withStatus("status.kopf.progress", map[string]any{"create_fn/sub1": delayedStatus}), &delayedRecord},
		{"null record", &StatusStorage{}, "create_fn", withStatus("status.kopf.progress", map[string]any{"create_fn": nil}), nil},
		{"custom field", &StatusStorage{Field: "status.my-operator"}, "create_fn", withStatus("status.my-operator", map[string]any{"create_fn": delayedStatus}), &delayedRecord},
		{"status not an object", &StatusStorage{}, "create_fn", map[string]any{"status": "weird"}, nil},
		{"int64 numbers from unstructured", &StatusStorage{}, "create_fn",
			withStatus("status.kopf.progress", map[string]any{"create_fn": map[string]any{"retries": int64(4), "success": true}}),
			&Record{Retries: 4, Success: true}},
	} {
		got, err := tc.s.Fetch(tc.id, tc.body)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestStatusFetchCorrupt(t *testing.T) {
	s := &StatusStorage{}
	for _, tc := range []struct {
		name string
		body map[string]any
		key  string
	}{
		{"container not an object", withStatus("status.kopf.progress", "x"), "status.kopf.progress"},
		{"record not an object", withStatus("status.kopf.progress", map[string]any{"create_fn": "x"}), "status.kopf.progress.create_fn"},
		{"bad field", withStatus("status.kopf.progress", map[string]any{"create_fn": map[string]any{"retries": "x"}}), "status.kopf.progress.create_fn"},
	} {
		got, err := s.Fetch("create_fn", tc.body)
		var ce *CorruptError
		if got != nil || !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.Key != tc.key {
			t.Errorf("%s: got %+v, %v; want ErrCorrupt at %q", tc.name, got, err, tc.key)
		}
	}
}

func TestStatusStore(t *testing.T) {
	var p patch.Patch
	(&StatusStorage{}).Store("create_fn/sub1", &Record{Started: t0, Purpose: "create", Retries: 1, Subrefs: []string{"z", "a"}}, map[string]any{}, &p)
	want := map[string]any{"status": map[string]any{"kopf": map[string]any{"progress": map[string]any{"create_fn/sub1": map[string]any{
		"started": "2026-01-02T03:04:05.123456+00:00",
		"stopped": nil, // nulls remove stale fields of the previous record in the merge
		"delayed": nil,
		"purpose": "create",
		"retries": int64(1),
		"success": false,
		"failure": false,
		"message": nil,
		"subrefs": []any{"a", "z"},
	}}}}}
	if got := p.Map(); !reflect.DeepEqual(got, want) {
		t.Errorf("patch\n got %v\nwant %v", got, want)
	}
	// What the API server keeps reads back as the same record.
	got, err := (&StatusStorage{}).Fetch("create_fn/sub1", p.Apply(map[string]any{}))
	if err != nil || got.Retries != 1 || got.Purpose != "create" || !got.Started.Equal(*t0) || !reflect.DeepEqual(got.Subrefs, []string{"a", "z"}) {
		t.Errorf("read back %+v, %v", got, err)
	}
}

func TestStatusStoreDoesNotAliasDefaultPath(t *testing.T) {
	var p patch.Patch
	s := &StatusStorage{}
	s.Store("a", &Record{}, nil, &p)
	s.Store("b", &Record{}, nil, &p)
	if !reflect.DeepEqual(defaultStatusPath, []string{"status", "kopf", "progress"}) {
		t.Fatalf("default path modified: %v", defaultStatusPath)
	}
	if progress := dicts.Map(p.Map(), "status", "kopf", "progress"); len(progress) != 2 {
		t.Errorf("progress = %v", progress)
	}
}

func TestStatusPurge(t *testing.T) {
	s := &StatusStorage{}
	for _, tc := range []struct {
		name   string
		body   map[string]any
		before func(*patch.Patch)
		want   map[string]any
	}{
		{"absent: nothing", map[string]any{}, nil, map[string]any{}},
		{"in the body: null", withStatus("status.kopf.progress", map[string]any{"create_fn": delayedStatus}), nil,
			map[string]any{"status": map[string]any{"kopf": map[string]any{"progress": map[string]any{"create_fn": nil}}}}},
		{"only in the patch: retracted, parents pruned", map[string]any{}, func(p *patch.Patch) {
			s.Store("create_fn", &delayedRecord, nil, p)
		}, map[string]any{}},
		{"only in the patch, siblings kept", map[string]any{}, func(p *patch.Patch) {
			s.Store("create_fn", &delayedRecord, nil, p)
			p.Status()["other"] = 1
		}, map[string]any{"status": map[string]any{"other": 1}}},
	} {
		var p patch.Patch
		if tc.before != nil {
			tc.before(&p)
		}
		s.Purge("create_fn", tc.body, &p)
		if got := p.Map(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: patch\n got %v\nwant %v", tc.name, got, tc.want)
		}
	}
}

func TestStatusTouch(t *testing.T) {
	s := &StatusStorage{TouchField: "status.my-dummy"}
	for _, tc := range []struct {
		name  string
		body  map[string]any
		value *string
		want  map[string]any
	}{
		{"set when absent", map[string]any{}, ptr("hello"), map[string]any{"status": map[string]any{"my-dummy": "hello"}}},
		{"set when different", withStatus("status.my-dummy", "old"), ptr("hello"), map[string]any{"status": map[string]any{"my-dummy": "hello"}}},
		{"same: nothing", withStatus("status.my-dummy", "hello"), ptr("hello"), map[string]any{}},
		{"remove when absent: nothing", map[string]any{}, nil, map[string]any{}},
		{"remove when present: null", withStatus("status.my-dummy", "x"), nil, map[string]any{"status": map[string]any{"my-dummy": nil}}},
	} {
		var p patch.Patch
		s.Touch(tc.body, &p, tc.value)
		if got := p.Map(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: patch %v, want %v", tc.name, got, tc.want)
		}
	}
	var p patch.Patch
	(&StatusStorage{}).Touch(map[string]any{}, &p, ptr("x"))
	if got := dicts.String(p.Map(), "status", "kopf", "dummy"); got != "x" {
		t.Errorf("default touch field: patch %v", p.Map())
	}
}

func TestStatusClear(t *testing.T) {
	for _, tc := range []struct {
		name     string
		s        *StatusStorage
		in, want map[string]any
	}{
		{"no status", &StatusStorage{}, map[string]any{"spec": map[string]any{"a": 1}}, map[string]any{"spec": map[string]any{"a": 1}}},
		{"progress removed, empty parents pruned", &StatusStorage{},
			map[string]any{"spec": map[string]any{}, "status": map[string]any{"kopf": map[string]any{"progress": map[string]any{"x": map[string]any{}}}}},
			map[string]any{"spec": map[string]any{}}},
		{"siblings kept, the touch-dummy too (Kopf clears only the field)", &StatusStorage{},
			map[string]any{"status": map[string]any{"phase": "Running", "kopf": map[string]any{"progress": map[string]any{}, "dummy": "x"}}},
			map[string]any{"status": map[string]any{"phase": "Running", "kopf": map[string]any{"dummy": "x"}}}},
		{"already empty parent pruned anyway", &StatusStorage{},
			map[string]any{"status": map[string]any{"kopf": map[string]any{}, "phase": "x"}},
			map[string]any{"status": map[string]any{"phase": "x"}}},
		{"custom field", &StatusStorage{Field: "status.my-operator"},
			map[string]any{"status": map[string]any{"my-operator": map[string]any{"create_fn": map[string]any{}}, "kopf": map[string]any{"progress": map[string]any{}}}},
			map[string]any{"status": map[string]any{"kopf": map[string]any{"progress": map[string]any{}}}}},
	} {
		before := dicts.DeepCopyMap(tc.in)
		if got := tc.s.Clear(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %v\nwant %v", tc.name, got, tc.want)
		}
		if !reflect.DeepEqual(tc.in, before) {
			t.Errorf("%s: input modified", tc.name)
		}
	}
}
