package persistence

import (
	"errors"
	"reflect"
	"testing"

	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/patch"
)

// Kopf's documented multi-storage example (compat: persistence-progress-storages).
func exampleMulti() *MultiStorage {
	return &MultiStorage{Storages: []Storage{
		&AnnotationsStorage{Prefix: "my-op.example.com"},
		&StatusStorage{Field: "status.my-operator"},
	}}
}

func TestMultiStoreWritesAll(t *testing.T) {
	var p patch.Patch
	exampleMulti().Store("create_fn", &delayedRecord, map[string]any{}, &p)
	if got := dicts.String(p.Map(), "metadata", "annotations", "my-op.example.com/create_fn"); got != delayedJSON {
		t.Errorf("annotation %q", got)
	}
	if got := dicts.Map(p.Map(), "status", "my-operator", "create_fn"); got["retries"] != int64(1) {
		t.Errorf("status record %v", got)
	}
}

func TestMultiFetchPrecedence(t *testing.T) {
	m := exampleMulti()
	hand := map[string]any{"retries": float64(5)}
	for _, tc := range []struct {
		name    string
		body    map[string]any
		want    *Record
		corrupt bool
	}{
		{"none", map[string]any{}, nil, false},
		{"first wins when they disagree", map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{"my-op.example.com/create_fn": delayedJSON}},
			"status":   map[string]any{"my-operator": map[string]any{"create_fn": hand}},
		}, &delayedRecord, false},
		{"second when the first has none", map[string]any{
			"status": map[string]any{"my-operator": map[string]any{"create_fn": hand}},
		}, &Record{Retries: 5}, false},
		{"a corrupt first does not hide a good second", map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{"my-op.example.com/create_fn": "{"}},
			"status":   map[string]any{"my-operator": map[string]any{"create_fn": hand}},
		}, &Record{Retries: 5}, false},
		{"corrupt only", map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{"my-op.example.com/create_fn": "{"}},
		}, nil, true},
	} {
		got, err := m.Fetch("create_fn", tc.body)
		if tc.corrupt != errors.Is(err, ErrCorrupt) || (!tc.corrupt && err != nil) {
			t.Errorf("%s: err = %v", tc.name, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestMultiPurgeTouchClearAll(t *testing.T) {
	m := exampleMulti()
	// The status storage's touch field stays status.kopf.dummy: its Name is
	// the default and TouchField is not set.
	body := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"my-op.example.com/create_fn": "{}", "my-op.example.com/touch-dummy": "x"}},
		"status": map[string]any{
			"my-operator": map[string]any{"create_fn": map[string]any{}},
			"kopf":        map[string]any{"dummy": "x"},
		},
	}
	var p patch.Patch
	m.Purge("create_fn", body, &p)
	m.Touch(body, &p, nil)
	want := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{
			"my-op.example.com/create_fn":   nil,
			"my-op.example.com/touch-dummy": nil,
			// Kopf brands the prefix whenever a touch changes anything, even a removal.
			"my-op.example.com/kopf-managed": "yes",
		}},
		"status": map[string]any{"my-operator": map[string]any{"create_fn": nil}, "kopf": map[string]any{"dummy": nil}},
	}
	if got := p.Map(); !reflect.DeepEqual(got, want) {
		t.Errorf("patch\n got %v\nwant %v", got, want)
	}

	essence := map[string]any{"spec": map[string]any{"a": 1}, "metadata": map[string]any{"annotations": map[string]any{"my-op.example.com/create_fn": "{}"}},
		"status": map[string]any{"my-operator": map[string]any{"create_fn": map[string]any{}}}}
	if got := m.Clear(essence); !reflect.DeepEqual(got, map[string]any{"spec": map[string]any{"a": 1}}) {
		t.Errorf("clear: %v", got)
	}
}

func TestDefaultIsSmartWithKopfDefaults(t *testing.T) {
	s, ok := Default().(*SmartStorage)
	if !ok {
		t.Fatalf("Default() = %T", Default())
	}
	if s.Annotations != *NewAnnotationsStorage() || s.Status != (StatusStorage{}) {
		t.Errorf("Default() = %+v", s)
	}
	if want := (AnnotationsStorage{Prefix: "kopf.zalando.org", TouchKey: "touch-dummy", V1: true}); s.Annotations != want {
		t.Errorf("annotations = %+v, want %+v", s.Annotations, want)
	}
}

// (compat: persistence-progress-storages): an object left mid-cycle by Kopf's
// old status storage continues from its status record; the record is purged at
// the end and never written.
func TestSmartReadsLegacyStatusAndPurgesIt(t *testing.T) {
	s := Default()
	legacy := map[string]any{"started": "2020-02-14T16:58:25.396364", "stopped": "2020-02-14T16:58:25.401844", "retries": float64(1), "success": true}
	body := map[string]any{"status": map[string]any{"kopf": map[string]any{"progress": map[string]any{"create_fn": legacy}}}}

	got, err := s.Fetch("create_fn", body)
	if err != nil || got == nil || !got.Success || got.Retries != 1 || !got.Started.Equal(*ts("2020-02-14T16:58:25.396364Z")) {
		t.Fatalf("fetch: %+v, %v", got, err)
	}

	var p patch.Patch
	s.Purge("create_fn", body, &p)
	want := map[string]any{"status": map[string]any{"kopf": map[string]any{"progress": map[string]any{"create_fn": nil}}}}
	if !reflect.DeepEqual(p.Map(), want) {
		t.Errorf("purge: %v, want %v", p.Map(), want)
	}
}

func TestSmartAnnotationsTakePrecedence(t *testing.T) {
	body := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"kopf.zalando.org/create_fn": delayedJSON}},
		"status":   map[string]any{"kopf": map[string]any{"progress": map[string]any{"create_fn": map[string]any{"success": true}}}},
	}
	got, err := Default().Fetch("create_fn", body)
	if err != nil || !reflect.DeepEqual(got, &delayedRecord) {
		t.Errorf("got %+v, %v", got, err)
	}
}

func TestSmartWritesAndTouchesAnnotationsOnly(t *testing.T) {
	s := Default()
	var p patch.Patch
	s.Store("create_fn", &delayedRecord, map[string]any{}, &p)
	s.Touch(map[string]any{"status": map[string]any{"kopf": map[string]any{"dummy": "x"}}}, &p, ptr("t"))
	want := map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		"kopf.zalando.org/create_fn":   delayedJSON,
		"kopf.zalando.org/touch-dummy": "t",
	}}}
	if !reflect.DeepEqual(p.Map(), want) {
		t.Errorf("patch\n got %v\nwant %v", p.Map(), want)
	}
	p = patch.Patch{}
	s.Touch(map[string]any{"status": map[string]any{"kopf": map[string]any{"dummy": "x"}}}, &p, nil)
	if !p.IsEmpty() {
		t.Errorf("touch removal wrote %v; the status dummy is not the smart storage's", p.Map())
	}
}

func TestSmartStoreThenPurgeInOneCycleSendsNothing(t *testing.T) {
	s := Default()
	var p patch.Patch
	s.Store(longID, &delayedRecord, map[string]any{}, &p)
	s.Purge(longID, map[string]any{}, &p)
	if !p.IsEmpty() {
		t.Errorf("patch %v, want empty", p.Map())
	}
}

func TestSmartClear(t *testing.T) {
	essence := map[string]any{
		"spec":     map[string]any{"a": 1},
		"metadata": map[string]any{"labels": map[string]any{"x": "y"}, "annotations": map[string]any{"kopf.zalando.org/create_fn": "{}", "kopf.zalando.org/touch-dummy": "t"}},
		"status":   map[string]any{"kopf": map[string]any{"progress": map[string]any{"create_fn": map[string]any{}}}},
	}
	want := map[string]any{"spec": map[string]any{"a": 1}, "metadata": map[string]any{"labels": map[string]any{"x": "y"}}}
	if got := Default().Clear(essence); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestZeroSmartStorageWorks(t *testing.T) {
	var s SmartStorage
	var p patch.Patch
	s.Store("create_fn", &delayedRecord, map[string]any{}, &p)
	got, err := s.Fetch("create_fn", p.Apply(map[string]any{}))
	if err != nil || !reflect.DeepEqual(got, &delayedRecord) {
		t.Errorf("got %+v, %v", got, err)
	}
}
