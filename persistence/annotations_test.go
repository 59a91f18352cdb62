package persistence

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/patch"
)

// A handler id whose keys are hashed, with V1 and V2 keys differing (the
// expected keys are Kopf-computed, see internal/conventions' fixtures).
const (
	longID    = "on_field_spec_a-very-long-field-name-which-exceeds-the-limit/sub1"
	longKeyV2 = "kopf.zalando.org/on_field_spec_a-very-long-field-name-which-exceeds-the-l-HsVldA"
	longKeyV1 = "kopf.zalando.org/on_field_spec_a-very-long-field-name-wh-1LX0CQ"
)

const delayedJSON = `{"started":"2026-01-02T03:04:05.123456+00:00","delayed":"2026-01-02T03:04:35.123456+00:00","purpose":"create","retries":1,"success":false,"failure":false,"message":"Not ready yet."}`

var delayedRecord = Record{Started: t0, Delayed: t1, Purpose: "create", Retries: 1, Message: "Not ready yet."}

func withAnnotations(kv ...any) map[string]any {
	ann := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		ann[kv[i].(string)] = kv[i+1]
	}
	return map[string]any{"metadata": map[string]any{"annotations": ann}}
}

func replicaSetOfDeployment(annotations map[string]any) map[string]any {
	if annotations == nil {
		annotations = map[string]any{} // a typed nil map would crash patch.Apply
	}
	return map[string]any{
		"kind": "ReplicaSet",
		"metadata": map[string]any{
			"annotations":     annotations,
			"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "u"}},
		},
	}
}

func annotationsOf(p *patch.Patch) map[string]any {
	return dicts.Map(p.Map(), "metadata", "annotations")
}

func ptr(s string) *string { return &s }

func TestAnnotationsFetch(t *testing.T) {
	s := NewAnnotationsStorage()
	for _, tc := range []struct {
		name string
		id   string
		body map[string]any
		want *Record
	}{
		{"empty body", "create_fn", map[string]any{}, nil},
		{"nil body", "create_fn", nil, nil},
		{"other handler only", "create_fn", withAnnotations("kopf.zalando.org/update_fn", delayedJSON), nil},
		{"other prefix only", "create_fn", withAnnotations("other.example.com/create_fn", delayedJSON), nil},
		{"v2 key", "create_fn", withAnnotations("kopf.zalando.org/create_fn", delayedJSON), &delayedRecord},
		{"safe sub-handler key", "create_fn/sub1", withAnnotations("kopf.zalando.org/create_fn.sub1", delayedJSON), &delayedRecord},
		{"hashed v2 key", longID, withAnnotations(longKeyV2, delayedJSON), &delayedRecord},
		{"hashed v1 key only (older Kopf)", longID, withAnnotations(longKeyV1, delayedJSON), &delayedRecord},
		{"v2 preferred over v1", longID, withAnnotations(longKeyV2, delayedJSON, longKeyV1, `{"retries":9}`), &delayedRecord},
		{"null v2 falls back to v1", longID, withAnnotations(longKeyV2, "null", longKeyV1, delayedJSON), &delayedRecord},
		{"null is absent", "create_fn", withAnnotations("kopf.zalando.org/create_fn", "null"), nil},
		{"-ofDRS key for replicasets of deployments", "create_fn", replicaSetOfDeployment(map[string]any{
			"kopf.zalando.org/create_fn":       `{"retries":7}`, // the deployment's, copied down by Kubernetes
			"kopf.zalando.org/create_fn-ofDRS": delayedJSON,
		}), &delayedRecord},
		{"deployment's copied record is not the replicaset's", "create_fn", replicaSetOfDeployment(map[string]any{
			"kopf.zalando.org/create_fn": delayedJSON,
		}), nil},
	} {
		got, err := s.Fetch(tc.id, tc.body)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestAnnotationsFetchCorrupt(t *testing.T) {
	s := NewAnnotationsStorage()
	for _, tc := range []struct {
		name, id string
		body     map[string]any
		key      string
	}{
		{"not json", "create_fn", withAnnotations("kopf.zalando.org/create_fn", "{oops"), "kopf.zalando.org/create_fn"},
		{"not an object", "create_fn", withAnnotations("kopf.zalando.org/create_fn", "[1]"), "kopf.zalando.org/create_fn"},
		{"bad field", "create_fn", withAnnotations("kopf.zalando.org/create_fn", `{"started":"soon"}`), "kopf.zalando.org/create_fn"},
		{"not a string", "create_fn", withAnnotations("kopf.zalando.org/create_fn", 42), "kopf.zalando.org/create_fn"},
		{"hashed key", longID, withAnnotations(longKeyV2, "{"), longKeyV2},
	} {
		got, err := s.Fetch(tc.id, tc.body)
		if got != nil || !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: got %+v, %v; want nil, ErrCorrupt", tc.name, got, err)
			continue
		}
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Key != tc.key || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: error %q does not name the key %q", tc.name, err, tc.key)
		}
	}
	// A corrupt V2 value does not hide a good V1 one.
	got, err := s.Fetch(longID, withAnnotations(longKeyV2, "{", longKeyV1, delayedJSON))
	if err != nil || !reflect.DeepEqual(got, &delayedRecord) {
		t.Errorf("corrupt v2, good v1: got %+v, %v", got, err)
	}
}

func TestAnnotationsStore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		storage *AnnotationsStorage
		id      string
		body    map[string]any
		before  map[string]any // patch annotations before storing
		want    map[string]any // patch annotations after storing
	}{
		{
			name: "kopf defaults", storage: NewAnnotationsStorage(), id: "create_fn", body: map[string]any{},
			want: map[string]any{"kopf.zalando.org/create_fn": delayedJSON},
		},
		{
			name: "zero value means kopf's prefix", storage: &AnnotationsStorage{}, id: "create_fn", body: map[string]any{},
			want: map[string]any{"kopf.zalando.org/create_fn": delayedJSON},
		},
		{
			name: "v1 and v2 keys of a long id", storage: NewAnnotationsStorage(), id: longID, body: map[string]any{},
			want: map[string]any{longKeyV2: delayedJSON, longKeyV1: delayedJSON},
		},
		{
			name: "only v2 without v1", storage: &AnnotationsStorage{Prefix: "kopf.zalando.org"}, id: longID, body: map[string]any{},
			want: map[string]any{longKeyV2: delayedJSON},
		},
		{
			name: "-ofDRS", storage: NewAnnotationsStorage(), id: "create_fn/sub1", body: replicaSetOfDeployment(nil),
			want: map[string]any{"kopf.zalando.org/create_fn.sub1-ofDRS": delayedJSON},
		},
		{
			name: "verbose", storage: &AnnotationsStorage{Verbose: true}, id: "create_fn", body: map[string]any{},
			want: map[string]any{"kopf.zalando.org/create_fn": string(delayedRecord.appendJSON(nil, true))},
		},
		{
			name: "own prefix gets the marker", storage: &AnnotationsStorage{Prefix: "my-op.example.com"}, id: "create_fn", body: map[string]any{},
			want: map[string]any{"my-op.example.com/create_fn": delayedJSON, "my-op.example.com/kopf-managed": "yes"},
		},
		{
			name: "kopf. prefixes get no marker", storage: &AnnotationsStorage{Prefix: "kopf.example.com"}, id: "create_fn", body: map[string]any{},
			want: map[string]any{"kopf.example.com/create_fn": delayedJSON},
		},
		{
			name: "marker already on the object", storage: &AnnotationsStorage{Prefix: "my-op.example.com"}, id: "create_fn",
			body: withAnnotations("my-op.example.com/kopf-managed", "yes"),
			want: map[string]any{"my-op.example.com/create_fn": delayedJSON},
		},
		{
			name: "marker already in the patch", storage: &AnnotationsStorage{Prefix: "my-op.example.com"}, id: "create_fn", body: map[string]any{},
			before: map[string]any{"my-op.example.com/kopf-managed": nil},
			want:   map[string]any{"my-op.example.com/create_fn": delayedJSON, "my-op.example.com/kopf-managed": nil},
		},
		{
			name: "overwrites what the patch had", storage: NewAnnotationsStorage(), id: "create_fn", body: map[string]any{},
			before: map[string]any{"kopf.zalando.org/create_fn": "old", "x": "y"},
			want:   map[string]any{"kopf.zalando.org/create_fn": delayedJSON, "x": "y"},
		},
	} {
		var p patch.Patch
		for k, v := range tc.before {
			p.Annotations()[k] = v
		}
		tc.storage.Store(tc.id, &delayedRecord, tc.body, &p)
		if got := annotationsOf(&p); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: patch annotations\n got %v\nwant %v", tc.name, got, tc.want)
		}
	}
}

func TestAnnotationsStoreThenFetch(t *testing.T) {
	s := NewAnnotationsStorage()
	var p patch.Patch
	body := replicaSetOfDeployment(nil)
	rec := Record{Started: t0, Purpose: "update", Retries: 3, Subrefs: []string{"b", "a"}}
	s.Store(longID, &rec, body, &p)
	got, err := s.Fetch(longID, p.Apply(body))
	want := rec
	want.Subrefs = []string{"a", "b"}
	if err != nil || !reflect.DeepEqual(got, &want) {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
}

func TestAnnotationsPurge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		id      string
		body    map[string]any
		before  map[string]any
		want    map[string]any // whole patch after purging
		storage *AnnotationsStorage
	}{
		{name: "absent everywhere: nothing", id: "create_fn", body: map[string]any{}, want: map[string]any{}},
		{
			name: "in the body: null", id: "create_fn", body: withAnnotations("kopf.zalando.org/create_fn", delayedJSON),
			want: map[string]any{"metadata": map[string]any{"annotations": map[string]any{"kopf.zalando.org/create_fn": nil}}},
		},
		{
			name: "null in body still nulled", id: "create_fn", body: withAnnotations("kopf.zalando.org/create_fn", "null"),
			want: map[string]any{"metadata": map[string]any{"annotations": map[string]any{"kopf.zalando.org/create_fn": nil}}},
		},
		{
			name: "only in the patch: retracted and empty parents pruned", id: "create_fn", body: map[string]any{},
			before: map[string]any{"kopf.zalando.org/create_fn": delayedJSON},
			want:   map[string]any{},
		},
		{
			name: "only in the patch, with other annotations kept", id: "create_fn", body: map[string]any{},
			before: map[string]any{"kopf.zalando.org/create_fn": delayedJSON, "other": "x"},
			want:   map[string]any{"metadata": map[string]any{"annotations": map[string]any{"other": "x"}}},
		},
		{
			name: "both long keys in the body", id: longID, body: withAnnotations(longKeyV2, delayedJSON, longKeyV1, delayedJSON),
			want: map[string]any{"metadata": map[string]any{"annotations": map[string]any{longKeyV2: nil, longKeyV1: nil}}},
		},
		{
			name: "only the v1 key in the body", id: longID, body: withAnnotations(longKeyV1, delayedJSON),
			want: map[string]any{"metadata": map[string]any{"annotations": map[string]any{longKeyV1: nil}}},
		},
		{
			name: "-ofDRS", id: "create_fn", body: replicaSetOfDeployment(map[string]any{"kopf.zalando.org/create_fn": "{}", "kopf.zalando.org/create_fn-ofDRS": "{}"}),
			want: map[string]any{"metadata": map[string]any{"annotations": map[string]any{"kopf.zalando.org/create_fn-ofDRS": nil}}},
		},
		{
			name: "other prefix untouched", id: "create_fn", body: withAnnotations("kopf.zalando.org/create_fn", "{}"),
			storage: &AnnotationsStorage{Prefix: "my-op.example.com"},
			want:    map[string]any{},
		},
	} {
		s := tc.storage
		if s == nil {
			s = NewAnnotationsStorage()
		}
		var p patch.Patch
		for k, v := range tc.before {
			p.Annotations()[k] = v
		}
		s.Purge(tc.id, tc.body, &p)
		if got := p.Map(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: patch\n got %v\nwant %v", tc.name, got, tc.want)
		}
	}
}

func TestAnnotationsTouch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		storage *AnnotationsStorage
		body    map[string]any
		value   *string
		want    map[string]any // patch annotations; nil means an empty patch
	}{
		{name: "set when absent", storage: NewAnnotationsStorage(), body: map[string]any{}, value: ptr("2026-01-02T03:04:05.123456+00:00"),
			want: map[string]any{"kopf.zalando.org/touch-dummy": "2026-01-02T03:04:05.123456+00:00"}},
		{name: "set when different", storage: NewAnnotationsStorage(), body: withAnnotations("kopf.zalando.org/touch-dummy", "old"), value: ptr("new"),
			want: map[string]any{"kopf.zalando.org/touch-dummy": "new"}},
		{name: "same value: nothing", storage: NewAnnotationsStorage(), body: withAnnotations("kopf.zalando.org/touch-dummy", "v"), value: ptr("v")},
		{name: "remove when absent: nothing", storage: NewAnnotationsStorage(), body: map[string]any{}},
		{name: "remove when present: null", storage: NewAnnotationsStorage(), body: withAnnotations("kopf.zalando.org/touch-dummy", "v"),
			want: map[string]any{"kopf.zalando.org/touch-dummy": nil}},
		{name: "zero value uses kopf's key", storage: &AnnotationsStorage{}, body: map[string]any{}, value: ptr("v"),
			want: map[string]any{"kopf.zalando.org/touch-dummy": "v"}},
		{name: "custom key and prefix get the marker", storage: &AnnotationsStorage{Prefix: "my-op.example.com", TouchKey: "my-dummy"}, body: map[string]any{}, value: ptr("v"),
			want: map[string]any{"my-op.example.com/my-dummy": "v", "my-op.example.com/kopf-managed": "yes"}},
		{name: "-ofDRS", storage: NewAnnotationsStorage(), body: replicaSetOfDeployment(map[string]any{"kopf.zalando.org/touch-dummy": "x"}), value: ptr("v"),
			want: map[string]any{"kopf.zalando.org/touch-dummy-ofDRS": "v"}},
	} {
		var p patch.Patch
		tc.storage.Touch(tc.body, &p, tc.value)
		if tc.want == nil {
			if !p.IsEmpty() {
				t.Errorf("%s: patch %v, want none", tc.name, p.Map())
			}
			continue
		}
		if got := annotationsOf(&p); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: patch annotations\n got %v\nwant %v", tc.name, got, tc.want)
		}
	}
}

func TestAnnotationsClear(t *testing.T) {
	for _, tc := range []struct {
		name    string
		storage *AnnotationsStorage
		in      map[string]any
		want    map[string]any
	}{
		{
			name: "all of the prefix, touch-dummy included, others kept", storage: NewAnnotationsStorage(),
			in: map[string]any{"spec": map[string]any{"a": 1}, "metadata": map[string]any{"annotations": map[string]any{
				"kopf.zalando.org/create_fn": "{}", "kopf.zalando.org/touch-dummy": "x", "kopf.zalando.org/anything": "x",
				"my.kopf.zalando.org/x": "kept: another prefix", "user": "kept",
			}}},
			want: map[string]any{"spec": map[string]any{"a": 1}, "metadata": map[string]any{"annotations": map[string]any{
				"my.kopf.zalando.org/x": "kept: another prefix", "user": "kept",
			}}},
		},
		{
			name: "empty annotations and metadata dropped", storage: NewAnnotationsStorage(),
			in:   map[string]any{"spec": map[string]any{}, "metadata": map[string]any{"annotations": map[string]any{"kopf.zalando.org/create_fn": "{}"}}},
			want: map[string]any{"spec": map[string]any{}},
		},
		{
			name: "labels kept, empty annotations dropped", storage: NewAnnotationsStorage(),
			in:   map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}, "annotations": map[string]any{"kopf.zalando.org/x": "{}"}}},
			want: map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}},
		},
		{
			name: "marker of an own prefix removed too", storage: &AnnotationsStorage{Prefix: "my-op.example.com"},
			in:   map[string]any{"metadata": map[string]any{"annotations": map[string]any{"my-op.example.com/kopf-managed": "yes", "my-op.example.com/create_fn": "{}", "kopf.zalando.org/x": "y"}}},
			want: map[string]any{"metadata": map[string]any{"annotations": map[string]any{"kopf.zalando.org/x": "y"}}},
		},
		{
			name: "prefix must be followed by a slash", storage: NewAnnotationsStorage(),
			in:   map[string]any{"metadata": map[string]any{"annotations": map[string]any{"kopf.zalando.orgx/a": "1"}}},
			want: map[string]any{"metadata": map[string]any{"annotations": map[string]any{"kopf.zalando.orgx/a": "1"}}},
		},
		{
			name: "pre-existing empty stanzas dropped as in Kopf", storage: NewAnnotationsStorage(),
			in:   map[string]any{"spec": map[string]any{"x": 1}, "metadata": map[string]any{"labels": map[string]any{}, "annotations": map[string]any{}}, "status": map[string]any{}},
			want: map[string]any{"spec": map[string]any{"x": 1}},
		},
		{
			name: "nothing to clear", storage: NewAnnotationsStorage(),
			in:   map[string]any{"spec": map[string]any{"x": 1}},
			want: map[string]any{"spec": map[string]any{"x": 1}},
		},
	} {
		before := dicts.DeepCopyMap(tc.in)
		got := tc.storage.Clear(tc.in)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %v\nwant %v", tc.name, got, tc.want)
		}
		if !reflect.DeepEqual(tc.in, before) {
			t.Errorf("%s: the input essence was modified: %v", tc.name, tc.in)
		}
	}
}
