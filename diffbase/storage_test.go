package diffbase

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/patch"
)

// realisticBody is a custom resource as the API server returns it after a
// kubectl apply, a few handling cycles of a Kopf-style operator, and another
// operator's state on it.
const realisticBody = `{
  "apiVersion": "kopf.dev/v1",
  "kind": "KopfExample",
  "metadata": {
    "name": "kopf-example-1",
    "namespace": "default",
    "uid": "6c7b7fd1-1d5f-4cf4-8a52-3b1f4cbd3c27",
    "resourceVersion": "123456",
    "generation": 3,
    "creationTimestamp": "2026-01-02T03:04:05Z",
    "finalizers": ["kopf.zalando.org/KopfFinalizerMarker"],
    "labels": {"somelabel": "somevalue", "app": "demo"},
    "annotations": {
      "someannotation": "somevalue",
      "example.com/owner": "team-a",
      "kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"kopf.dev/v1\",\"kind\":\"KopfExample\",\"metadata\":{\"annotations\":{\"someannotation\":\"somevalue\"},\"labels\":{\"somelabel\":\"somevalue\"},\"name\":\"kopf-example-1\",\"namespace\":\"default\"},\"spec\":{\"duration\":\"1m\",\"field\":\"value\",\"items\":[\"item1\",\"item2\"]}}\n",
      "kopf.zalando.org/last-handled-configuration": "{\"spec\":{\"duration\":\"1m\",\"field\":\"value\",\"items\":[\"item1\",\"item2\"]},\"metadata\":{\"labels\":{\"somelabel\":\"somevalue\"},\"annotations\":{\"someannotation\":\"somevalue\"}}}\n",
      "kopf.zalando.org/create_fn": "{\"started\":\"2026-01-02T03:04:05.000000+00:00\",\"retries\":1,\"success\":false,\"failure\":false}",
      "kopf.zalando.org/touch-dummy": "2026-01-02T03:04:06.000000+00:00",
      "sub.kopf.zalando.org/x": "y",
      "other-operator.example.org/kopf-managed": "yes",
      "other-operator.example.org/last-handled-configuration": "{\"spec\":{}}\n",
      "other-operator.example.org/update_fn": "{}"
    },
    "managedFields": [
      {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "kopf.dev/v1",
       "time": "2026-01-02T03:04:05Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}, "f:someannotation": {}}, "f:labels": {".": {}, "f:somelabel": {}}}, "f:spec": {".": {}, "f:duration": {}, "f:field": {}, "f:items": {}}}},
      {"manager": "kopf", "operation": "Update", "apiVersion": "kopf.dev/v1",
       "time": "2026-01-02T03:04:06Z", "fieldsType": "FieldsV1",
       "fieldsV1": {"f:metadata": {"f:annotations": {"f:kopf.zalando.org/last-handled-configuration": {}}, "f:finalizers": {".": {}, "v:\"kopf.zalando.org/KopfFinalizerMarker\"": {}}}, "f:status": {".": {}, "f:create_fn": {".": {}, "f:message": {}}}}}
    ]
  },
  "spec": {"duration": "1m", "field": "value", "items": ["item1", "item2"], "replicas": 3},
  "status": {"create_fn": {"message": "hello world"}, "phase": "Running",
             "kopf": {"progress": {"create_fn": {"retries": 1}}, "last-handled-configuration": "{\"spec\":{}}"}}
}`

const realisticEssence = `{
  "metadata": {
    "labels": {"somelabel": "somevalue", "app": "demo"},
    "annotations": {"someannotation": "somevalue", "example.com/owner": "team-a"}
  },
  "spec": {"duration": "1m", "field": "value", "items": ["item1", "item2"], "replicas": 3}
}`

func allStorages() map[string]Storage {
	return map[string]Storage{
		"annotations": NewAnnotationsStorage(),
		"zero":        AnnotationsStorage{},
		"status":      StatusStorage{},
		"multi":       MultiStorage{Storages: []Storage{StatusStorage{}, NewAnnotationsStorage()}},
	}
}

func assertJSON(t *testing.T, got map[string]any, want string) {
	t.Helper()
	if w := obj(t, want); !dicts.Equal(got, w) || (got == nil) != (w == nil) {
		t.Errorf("got  %s\nwant %s", mustEncode(got), mustEncode(w))
	}
}

func TestBuildRealisticBody(t *testing.T) {
	for name, st := range allStorages() {
		t.Run(name, func(t *testing.T) {
			body := obj(t, realisticBody)
			before := dicts.DeepCopyMap(body)
			assertJSON(t, st.Build(body, nil), realisticEssence)
			if !reflect.DeepEqual(body, before) {
				t.Error("Build modified the body")
			}
		})
	}
}

func TestBuildRealisticBodyWithExtraFields(t *testing.T) {
	extras := [][]string{{"status", "phase"}, {"metadata", "name"}, {"status", "absent"}, {"spec", "field", "through-a-string"}}
	want := `{
	  "metadata": {
	    "name": "kopf-example-1",
	    "labels": {"somelabel": "somevalue", "app": "demo"},
	    "annotations": {"someannotation": "somevalue", "example.com/owner": "team-a"}
	  },
	  "spec": {"duration": "1m", "field": "value", "items": ["item1", "item2"], "replicas": 3},
	  "status": {"phase": "Running"}
	}`
	for name, st := range allStorages() {
		t.Run(name, func(t *testing.T) {
			assertJSON(t, st.Build(obj(t, realisticBody), extras), want)
		})
	}
}

// Ported from Kopf's tests/persistence/test_essences.py, for every storage.
func TestBuildKopfCases(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		extras [][]string
		want   string
	}{
		{"resource references removed", `{"apiVersion":"group/version","kind":"Kind"}`, nil, `{}`},
		{"system fields removed, parents cleaned", `{"metadata":{"uid":"x","name":"x","namespace":"x","generation":1,"finalizers":["x"],"resourceVersion":"1","creationTimestamp":"x","deletionTimestamp":"x","any-unexpected-field":"x"}}`, nil, `{}`},
		{"system fields removed, extras kept", `{"metadata":{"uid":"x","other":"y"}}`, [][]string{{"metadata", "other"}}, `{"metadata":{"other":"y"}}`},
		{"own diff-base removed", `{"metadata":{"annotations":{"kopf.zalando.org/last-handled-configuration":"x"}}}`, nil, `{}`},
		{"kubectl's copy removed", `{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"x"}}}`, nil, `{}`},
		{"garbage removed, others kept", `{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"x","other":"y"}}}`, nil, `{"metadata":{"annotations":{"other":"y"}}}`},
		{"status removed", `{"status":{"kopf":{"progress":"x","anything":"y"},"other":"z"}}`, nil, `{}`},
		{"status removed, extras kept", `{"status":{"kopf":{"progress":"x","anything":"y"},"other":"z"}}`, [][]string{{"status", "other"}}, `{"status":{"other":"z"}}`},
		{"empty labels and annotations removed", `{"metadata":{"labels":{},"annotations":{}},"spec":{"a":1}}`, nil, `{"spec":{"a":1}}`},
		{"null labels removed", `{"metadata":{"labels":null}}`, nil, `{}`},
		{"falsy stanzas removed, as Python's not", `{"metadata":{"labels":"","annotations":[]},"status":0}`, [][]string{{"status"}}, `{}`},
		{"falsy status removed", `{"status":false}`, [][]string{{"status"}}, `{}`},
		{"truthy status kept", `{"status":"s"}`, [][]string{{"status"}}, `{"status":"s"}`},
		{"empty status extra removed", `{"status":{}}`, [][]string{{"status"}}, `{}`},
		{"status with an empty field kept", `{"status":{"phase":{}}}`, [][]string{{"status", "phase"}}, `{"status":{"phase":{}}}`},
		{"top-level fields other than spec kept", `{"data":{"k":"v"},"spec":{}}`, nil, `{"data":{"k":"v"},"spec":{}}`},
		{"root extra ignored", `{"spec":{"a":1},"status":{"b":2}}`, [][]string{{}}, `{"spec":{"a":1}}`},
	}
	for _, tt := range tests {
		for name, st := range allStorages() {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				assertJSON(t, st.Build(obj(t, tt.body), tt.extras), tt.want)
			})
		}
	}
}

func TestBuildCopiesEverything(t *testing.T) {
	for name, st := range allStorages() {
		t.Run(name, func(t *testing.T) {
			body := obj(t, `{"spec":{"depth":{"field":"x"},"list":[{"a":1}]},"metadata":{"labels":{"l":"1"},"annotations":{"a":"1"}},"status":{"s":{"t":1}}}`)
			essence := st.Build(body, [][]string{{"status", "s"}})
			body["spec"].(map[string]any)["depth"].(map[string]any)["field"] = "y"
			body["spec"].(map[string]any)["list"].([]any)[0].(map[string]any)["a"] = 2
			body["metadata"].(map[string]any)["labels"].(map[string]any)["l"] = "2"
			body["metadata"].(map[string]any)["annotations"].(map[string]any)["a"] = "2"
			body["status"].(map[string]any)["s"].(map[string]any)["t"] = 2
			assertJSON(t, essence, `{"spec":{"depth":{"field":"x"},"list":[{"a":1}]},"metadata":{"labels":{"l":"1"},"annotations":{"a":"1"}},"status":{"s":{"t":1}}}`)
		})
	}
}

func TestBuildManagedPrefixes(t *testing.T) {
	body := obj(t, `{"metadata":{"annotations":{
		"kopf.zalando.org/anything": "1",
		"sub.kopf.zalando.org/anything": "1",
		"notkopf.zalando.org/kept": "1",
		"a.example.com/kopf-managed": "yes",
		"a.example.com/progress": "1",
		"b.example.com/kept": "1",
		"no-prefix": "1"
	}}}`)
	assertJSON(t, Default().Build(body, nil),
		`{"metadata":{"annotations":{"notkopf.zalando.org/kept":"1","b.example.com/kept":"1","no-prefix":"1"}}}`)
}

// The shard label that sharding puts on objects is no change of them: an
// object labelled after it was handled has the essence it had.
func TestBuildLeavesShardLabelsOut(t *testing.T) {
	before := obj(t, `{"spec":{"a":1},"metadata":{"labels":{"app":"x"}}}`)
	after := obj(t, `{"spec":{"a":1},"metadata":{"labels":{"app":"x","shard.kopfgo.dev/my-operator":"3","other.kopfgo.dev/kept":"1"}}}`)
	assertJSON(t, Default().Build(before, nil), `{"spec":{"a":1},"metadata":{"labels":{"app":"x"}}}`)
	assertJSON(t, Default().Build(after, nil), `{"spec":{"a":1},"metadata":{"labels":{"app":"x","other.kopfgo.dev/kept":"1"}}}`)
	only := obj(t, `{"spec":{"a":1},"metadata":{"labels":{"shard.kopfgo.dev/my-operator":"3"}}}`)
	assertJSON(t, Default().Build(only, nil), `{"spec":{"a":1}}`)
}

func TestBuildOwnKeysOfACustomPrefix(t *testing.T) {
	// Before the first Store, a custom prefix has no kopf-managed marker, so
	// only the storage's own keys identify its state.
	long := strings.Repeat("p", 60) + ".example.com"
	st := &AnnotationsStorage{Prefix: long, Key: "diff-base", V1: true}
	keys := st.keys(nil)
	if len(keys) != 2 {
		t.Fatalf("a long prefix must give V2 and V1 keys, got %v", keys)
	}
	body := map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		keys[0]: "{}", keys[1]: "{}", long + "/other": "kept",
	}}}
	assertJSON(t, st.Build(body, nil), `{"metadata":{"annotations":{"`+long+`/other":"kept"}}}`)
	assertJSON(t, st.Build(map[string]any{"metadata": map[string]any{"annotations": map[string]any{keys[0]: "{}"}}}, nil), `{}`)
}

func TestBuildWholeAnnotationsExtraStaysFiltered(t *testing.T) {
	body := obj(t, `{"metadata":{"name":"n","annotations":{
		"kopf.zalando.org/handler": "{}",
		"kopf.zalando.org/watched": "w",
		"kubectl.kubernetes.io/last-applied-configuration": "{}",
		"user": "u"
	}}}`)
	for _, extras := range [][][]string{
		{{"metadata", "annotations"}},
		{{"metadata", "annotations"}, {"metadata", "annotations", "kopf.zalando.org/watched"}},
		{{"metadata"}},
	} {
		t.Run(strings.Join(extras[0], "."), func(t *testing.T) {
			got := Default().Build(body, extras)
			ann := dicts.Map(got, "metadata", "annotations")
			if _, ok := ann["kopf.zalando.org/handler"]; ok {
				t.Errorf("operator state in the essence: %v", ann)
			}
			if _, ok := ann["kubectl.kubernetes.io/last-applied-configuration"]; ok {
				t.Errorf("kubectl's copy in the essence: %v", ann)
			}
			if ann["user"] != "u" {
				t.Errorf("user annotation lost: %v", ann)
			}
			_, watched := ann["kopf.zalando.org/watched"]
			if explicit := len(extras) > 1; watched != explicit {
				t.Errorf("explicitly watched annotation kept = %v, want %v", watched, explicit)
			}
		})
	}
	// A single watched annotation is kept even under a managed prefix.
	got := Default().Build(body, [][]string{{"metadata", "annotations", "kopf.zalando.org/watched"}})
	assertJSON(t, got, `{"metadata":{"annotations":{"user":"u","kopf.zalando.org/watched":"w"}}}`)
}

func TestBuildIgnoredFields(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		ignored [][]string
		want    string
	}{
		{"field removed", `{"spec":{"a":1,"b":2}}`, [][]string{{"spec", "a"}}, `{"spec":{"b":2}}`},
		{"emptied parents pruned", `{"spec":{"x":{"a":1}},"data":1}`, [][]string{{"spec", "x", "a"}}, `{"data":1}`},
		{"already empty parent pruned, as in Kopf", `{"spec":{}}`, [][]string{{"spec", "a"}}, `{}`},
		{"absent parent is fine", `{"data":1}`, [][]string{{"spec", "a"}}, `{"data":1}`},
		{"path through a scalar is skipped", `{"spec":{"a":"s"}}`, [][]string{{"spec", "a", "b"}}, `{"spec":{"a":"s"}}`},
		{"path through a list is skipped", `{"spec":{"a":[1]}}`, [][]string{{"spec", "a", "b"}}, `{"spec":{"a":[1]}}`},
		{"label ignored, stanzas pruned", `{"metadata":{"labels":{"x":"1"}}}`, [][]string{{"metadata", "labels", "x"}}, `{}`},
		{"top-level ignored", `{"spec":{"a":1},"data":1}`, [][]string{{"spec"}}, `{"data":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for name, st := range map[string]Storage{
				"annotations": &AnnotationsStorage{IgnoredFields: tt.ignored},
				"status":      StatusStorage{IgnoredFields: tt.ignored},
				"multi":       MultiStorage{Storages: []Storage{StatusStorage{IgnoredFields: tt.ignored}}},
			} {
				body := obj(t, tt.body)
				before := dicts.DeepCopyMap(body)
				assertJSON(t, st.Build(body, nil), tt.want)
				if !reflect.DeepEqual(body, before) {
					t.Errorf("%s: Build modified the body", name)
				}
			}
		})
	}
}

func TestStatusStorageBuildDropsItsOwnField(t *testing.T) {
	body := obj(t, `{"spec":{"a":1},"status":{"phase":"x","kopf":{"last-handled-configuration":"{}"}},"metadata":{"annotations":{"kopf.zalando.org/last-handled-configuration":"{}"}}}`)
	assertJSON(t, StatusStorage{}.Build(body, [][]string{{"status"}}), `{"spec":{"a":1},"status":{"phase":"x"}}`)

	custom := StatusStorage{Field: "status.diff-base"}
	body = obj(t, `{"status":{"diff-base":"{}"}}`)
	assertJSON(t, custom.Build(body, [][]string{{"status"}}), `{}`)

	named := StatusStorage{Name: "my-op"}
	if got := strings.Join(named.path(), "."); got != "status.my-op.last-handled-configuration" {
		t.Errorf("path: %s", got)
	}
}

// (compat: persistence-diffbase): the annotation is the essence as compact JSON
// plus "\n".
func TestAnnotationsStoreFormat(t *testing.T) {
	body := obj(t, `{"apiVersion":"kopf.dev/v1","kind":"KopfExample","metadata":{"name":"n","labels":{"a":"b"}},"spec":{"field":"x"}}`)
	st := Default()
	var p patch.Patch
	st.Store(body, &p, st.Build(body, nil))
	got := p.Map()["metadata"].(map[string]any)["annotations"].(map[string]any)
	want := map[string]any{"kopf.zalando.org/last-handled-configuration": `{"metadata":{"labels":{"a":"b"}},"spec":{"field":"x"}}` + "\n"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestAnnotationsStoreSpecialCharacters(t *testing.T) {
	var p patch.Patch
	Default().Store(map[string]any{}, &p, map[string]any{"spec": map[string]any{"s": "<a&b> é ☃"}})
	got := p.Map()["metadata"].(map[string]any)["annotations"].(map[string]any)["kopf.zalando.org/last-handled-configuration"]
	if want := `{"spec":{"s":"<a&b> é ☃"}}` + "\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestAnnotationsStoreMarkerAndKeys(t *testing.T) {
	essence := map[string]any{"spec": map[string]any{"a": int64(1)}}
	long := strings.Repeat("p", 40) + ".example.com"
	tests := []struct {
		name string
		st   Storage
		body map[string]any
		want []string
	}{
		{"default prefix: one key, no marker", Default(), map[string]any{},
			[]string{"kopf.zalando.org/last-handled-configuration"}},
		{"zero value is the default", AnnotationsStorage{}, map[string]any{},
			[]string{"kopf.zalando.org/last-handled-configuration"}},
		{"kopf.* prefixes need no marker", &AnnotationsStorage{Prefix: "kopf.example.com"}, map[string]any{},
			[]string{"kopf.example.com/last-handled-configuration"}},
		{"custom prefix: marker", &AnnotationsStorage{Prefix: "my-op.example.com", Key: "diff-base"}, map[string]any{},
			[]string{"my-op.example.com/diff-base", "my-op.example.com/kopf-managed"}},
		{"marker already on the body", &AnnotationsStorage{Prefix: "my-op.example.com"},
			map[string]any{"metadata": map[string]any{"annotations": map[string]any{"my-op.example.com/kopf-managed": "yes"}}},
			[]string{"my-op.example.com/last-handled-configuration"}},
		{"long prefix: V2 and V1 keys", &AnnotationsStorage{Prefix: long, V1: true}, map[string]any{},
			[]string{long + "/kopf-managed", long + "/last-handled-configuration", AnnotationsStorage{Prefix: long, V1: true}.keys(nil)[1]}},
		{"long prefix without V1", &AnnotationsStorage{Prefix: long}, map[string]any{},
			[]string{long + "/kopf-managed", long + "/last-handled-configuration"}},
		{"ReplicaSet of a Deployment: -ofDRS", Default(),
			map[string]any{"kind": "ReplicaSet", "metadata": map[string]any{"ownerReferences": []any{map[string]any{"kind": "Deployment"}}}},
			[]string{"kopf.zalando.org/last-handled-configuration-ofDRS"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p patch.Patch
			tt.st.Store(tt.body, &p, essence)
			ann := dicts.Map(p.Map(), "metadata", "annotations")
			var got []string
			for k := range ann {
				got = append(got, k)
			}
			if !sameSet(got, tt.want) {
				t.Errorf("keys %v, want %v", got, tt.want)
			}
			// What was stored is what is fetched.
			back, err := tt.st.Fetch(p.Apply(tt.body))
			if err != nil || !dicts.Equal(back, essence) {
				t.Errorf("Fetch after Store = %v, %v", back, err)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		seen[s]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

func TestStoreOnlyWhenDifferent(t *testing.T) {
	essence := obj(t, `{"spec":{"field":"x","n":1,"s":"é"},"metadata":{"labels":{"a":"b"}}}`)
	// As Python's json.dumps writes it: insertion order, \u escapes, and
	// integers read back as floats by some decoders.
	kopfWritten := `{"spec": {"field": "x", "n": 1.0, "s": "\u00e9"}, "metadata": {"labels": {"a": "b"}}}` + "\n"
	kopfStatus := strings.TrimSuffix(kopfWritten, "\n")
	ours := string(mustEncode(essence))

	tests := []struct {
		name   string
		st     Storage
		stored string
		write  bool
	}{
		{"annotation absent", Default(), "", true},
		{"annotation same bytes", Default(), ours, false},
		{"annotation written by Kopf", Default(), kopfWritten, false},
		{"annotation differs", Default(), `{"spec":{"field":"y"}}` + "\n", true},
		{"annotation corrupt", Default(), `{"spec":`, true},
		{"status absent", StatusStorage{}, "", true},
		{"status same bytes", StatusStorage{}, strings.TrimSuffix(ours, "\n"), false},
		{"status written by Kopf", StatusStorage{}, kopfStatus, false},
		{"status differs", StatusStorage{}, `{}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := map[string]any{"spec": essence["spec"]}
			if tt.stored != "" {
				switch tt.st.(type) {
				case StatusStorage:
					body["status"] = map[string]any{"kopf": map[string]any{"last-handled-configuration": tt.stored}}
				default:
					body["metadata"] = map[string]any{"annotations": map[string]any{"kopf.zalando.org/last-handled-configuration": tt.stored}}
				}
			}
			var p patch.Patch
			tt.st.Store(body, &p, essence)
			if wrote := !p.IsEmpty(); wrote != tt.write {
				t.Errorf("wrote = %v, want %v: %v", wrote, tt.write, p.Map())
			}
		})
	}
}

func TestStoreTwiceInOneCycleKeepsTheLast(t *testing.T) {
	first := map[string]any{"spec": map[string]any{"a": int64(1)}}
	second := map[string]any{"spec": map[string]any{"a": int64(2)}}
	for name, st := range allStorages() {
		t.Run(name, func(t *testing.T) {
			var body map[string]any
			// The body already holds the second essence: the first Store
			// writes, the second must still overwrite the patch.
			var seed patch.Patch
			st.Store(map[string]any{}, &seed, second)
			body = seed.Apply(map[string]any{})

			var p patch.Patch
			st.Store(body, &p, first)
			st.Store(body, &p, second)
			got, err := st.Fetch(p.Apply(body))
			if err != nil || !dicts.Equal(got, second) {
				t.Errorf("Fetch = %v, %v; want %v", got, err, second)
			}
		})
	}
}

func TestStatusStoreFormat(t *testing.T) {
	var p patch.Patch
	StatusStorage{Field: "status.diff-base"}.Store(map[string]any{}, &p, obj(t, `{"spec":{"a":1}}`))
	if got, want := p.Map()["status"], any(map[string]any{"diff-base": `{"spec":{"a":1}}`}); !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
	// No annotation is written (compat: persistence-diffbase-storages).
	if p.Has("metadata") {
		t.Errorf("status storage wrote metadata: %v", p.Map())
	}
}

func TestFetch(t *testing.T) {
	essence := `{"spec":{"string-field":"value1","integer-field":123,"float-field":123.456,"false-field":false,"true-field":true}}`
	ann := func(key, v string) map[string]any {
		return map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}}
	}
	status := func(v any) map[string]any {
		return map[string]any{"status": map[string]any{"kopf": map[string]any{"last-handled-configuration": v}}}
	}
	const key = "kopf.zalando.org/last-handled-configuration"
	tests := []struct {
		name    string
		st      Storage
		body    map[string]any
		want    string // "" for nil
		corrupt string // a substring of the error when corrupt
	}{
		{"annotations: empty body", Default(), map[string]any{}, "", ""},
		{"annotations: other annotations", Default(), ann("other", "x"), "", ""},
		{"annotations: plain", Default(), ann(key, essence), essence, ""},
		{"annotations: trailing newline", Default(), ann(key, essence+"\n"), essence, ""},
		{"annotations: leading newline", Default(), ann(key, "\n"+essence), essence, ""},
		{"annotations: empty essence is not absence", Default(), ann(key, "{}\n"), "{}", ""},
		{"annotations: JSON null is absence", Default(), ann(key, "null"), "", ""},
		{"annotations: truncated", Default(), ann(key, `{"spec":`), "", key},
		{"annotations: not JSON", Default(), ann(key, `hello`), "", key},
		{"annotations: trailing garbage", Default(), ann(key, `{}}`), "", key},
		{"annotations: not an object", Default(), ann(key, `[1]`), "", key},
		{"annotations: empty string", Default(), ann(key, ``), "", key},
		{"status: empty body", StatusStorage{}, map[string]any{}, "", ""},
		{"status: plain", StatusStorage{}, status(essence), essence, ""},
		{"status: surrounded by newlines", StatusStorage{}, status("\n" + essence + "\n"), essence, ""},
		{"status: null", StatusStorage{}, status(nil), "", ""},
		{"status: corrupt", StatusStorage{}, status(`{`), "", "status.kopf.last-handled-configuration"},
		{"status: an object, not a string", StatusStorage{}, status(map[string]any{"spec": map[string]any{}}), "", "status.kopf.last-handled-configuration"},
		{"status: path through a string", StatusStorage{}, map[string]any{"status": map[string]any{"kopf": "x"}}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.st.Fetch(tt.body)
			if tt.corrupt != "" {
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tt.corrupt) {
					t.Errorf("err = %v, want ErrCorrupt naming %s", err, tt.corrupt)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if got != nil {
					t.Errorf("got %v, want nil", got)
				}
				return
			}
			assertJSON(t, got, tt.want)
		})
	}
}

func TestFetchNumbersAsClientGo(t *testing.T) {
	body := map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		"kopf.zalando.org/last-handled-configuration": `{"spec":{"i":3,"f":1.5,"big":9007199254740993,"e":1e3}}`,
	}}}
	got, err := Default().Fetch(body)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"spec": map[string]any{"i": int64(3), "f": 1.5, "big": int64(9007199254740993), "e": float64(1000)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
}

func TestFetchV1Fallback(t *testing.T) {
	long := strings.Repeat("p", 40) + ".example.com"
	st := &AnnotationsStorage{Prefix: long, V1: true}
	keys := st.keys(nil)
	v2, v1 := keys[0], keys[1]
	withAnn := func(kv ...string) map[string]any {
		ann := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			ann[kv[i]] = kv[i+1]
		}
		return map[string]any{"metadata": map[string]any{"annotations": ann}}
	}
	tests := []struct {
		name string
		body map[string]any
		want string
	}{
		{"V2 only", withAnn(v2, `{"v":2}`), `{"v":2}`},
		{"V1 only (written by an older Kopf)", withAnn(v1, `{"v":1}`), `{"v":1}`},
		{"V2 wins", withAnn(v2, `{"v":2}`, v1, `{"v":1}`), `{"v":2}`},
		{"V2 null falls back", withAnn(v2, `null`, v1, `{"v":1}`), `{"v":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := st.Fetch(tt.body)
			if err != nil {
				t.Fatal(err)
			}
			assertJSON(t, got, tt.want)
		})
	}
	// Without V1, the V1 key is not read.
	if got, _ := (&AnnotationsStorage{Prefix: long}).Fetch(withAnn(v1, `{"v":1}`)); got != nil {
		t.Errorf("V1 read with V1 off: %v", got)
	}
}

func TestMultiStorage(t *testing.T) {
	status := StatusStorage{Field: "status.diff-base"}
	annotations := NewAnnotationsStorage()
	multi := MultiStorage{Storages: []Storage{status, annotations}}

	// (compat: persistence-diffbase-storages): an object handled under the
	// default storage is not new for the transitional multi storage.
	body := obj(t, `{"metadata":{"labels":{"a":"b"},"annotations":{"kopf.zalando.org/last-handled-configuration":"{\"spec\":{\"v\":\"old\"}}\n"}},"spec":{"v":"new"}}`)
	got, err := multi.Fetch(body)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, got, `{"spec":{"v":"old"}}`)

	// Writes go to both, so the next read takes the first storage's value.
	var p patch.Patch
	multi.Store(body, &p, multi.Build(body, nil))
	body = p.Apply(body)
	if s, _ := dicts.Get(body, []string{"status", "diff-base"}); s != `{"metadata":{"labels":{"a":"b"}},"spec":{"v":"new"}}` {
		t.Errorf("status.diff-base = %v", s)
	}
	got, _ = annotations.Fetch(body)
	assertJSON(t, got, `{"metadata":{"labels":{"a":"b"}},"spec":{"v":"new"}}`)

	// The first storage that has one wins.
	body["status"] = map[string]any{"diff-base": `{"from":"status"}`}
	got, _ = multi.Fetch(body)
	assertJSON(t, got, `{"from":"status"}`)
	got, _ = MultiStorage{Storages: []Storage{annotations, status}}.Fetch(body)
	assertJSON(t, got, `{"metadata":{"labels":{"a":"b"}},"spec":{"v":"new"}}`)

	// Each storage removes its own fields, even when status is watched.
	essence := multi.Build(body, [][]string{{"status"}})
	assertJSON(t, essence, `{"metadata":{"labels":{"a":"b"}},"spec":{"v":"new"}}`)

	// A corrupt value stops the search.
	body["status"] = map[string]any{"diff-base": `{`}
	if _, err := multi.Fetch(body); !errors.Is(err, ErrCorrupt) {
		t.Errorf("err = %v, want ErrCorrupt", err)
	}

	// Empty: nothing stored, nothing read, the plain essence built.
	empty := MultiStorage{}
	if got, err := empty.Fetch(body); got != nil || err != nil {
		t.Errorf("empty Fetch = %v, %v", got, err)
	}
	var q patch.Patch
	empty.Store(body, &q, essence)
	if !q.IsEmpty() {
		t.Errorf("empty Store wrote %v", q.Map())
	}
}

func TestStoreRoundTripThroughCompute(t *testing.T) {
	// The executor's loop: build, store, apply, fetch, build again: no diff.
	for name, st := range allStorages() {
		t.Run(name, func(t *testing.T) {
			body := obj(t, realisticBody)
			delete(body["metadata"].(map[string]any)["annotations"].(map[string]any), "kopf.zalando.org/last-handled-configuration")
			delete(body["status"].(map[string]any), "kopf")
			old, err := st.Fetch(body)
			if err != nil || old != nil {
				t.Fatalf("Fetch on an unhandled object = %v, %v", old, err)
			}
			extras := [][]string{{"status", "phase"}}
			new := st.Build(body, extras)
			var p patch.Patch
			st.Store(body, &p, new)
			body = p.Apply(body)
			old, err = st.Fetch(body)
			if err != nil {
				t.Fatal(err)
			}
			if d := Compute(old, st.Build(body, extras)); len(d) != 0 {
				t.Errorf("diff after own store: %v", d)
			}
			var q patch.Patch
			st.Store(body, &q, new)
			if !q.IsEmpty() {
				t.Errorf("second Store wrote %v", q.Map())
			}
		})
	}
}

func TestDefault(t *testing.T) {
	want := &AnnotationsStorage{Prefix: "kopf.zalando.org", Key: "last-handled-configuration", V1: true}
	if got := Default(); !reflect.DeepEqual(got, want) {
		t.Errorf("Default() = %#v, want %#v", got, want)
	}
}

func TestStoreRejectsNonJSONValues(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a channel in the essence")
		}
	}()
	var p patch.Patch
	Default().Store(map[string]any{}, &p, map[string]any{"spec": make(chan int)})
}
