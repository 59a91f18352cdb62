package conventions

import (
	"reflect"
	"strings"
	"testing"
)

// The expected keys below were computed by Kopf's own algorithm
// (StorageKeyFormingConvention.make_v1_key/make_v2_key/make_suffix in
// kopf/_cogs/configs/conventions.py, run under CPython) and hard-coded here,
// so that a drift from Kopf's naming shows up as a test failure rather than
// as a kopfgo operator silently missing the records a Kopf operator left.
// The "my-operator.example.com" rows include the fixtures of Kopf's own test
// suite (tests/persistence/test_annotations_hashing.py).
var keyFixtures = []struct {
	prefix, id, v2, v1 string
}{
	{prefix: "kopf.zalando.org", id: "create_fn", v2: "kopf.zalando.org/create_fn", v1: "kopf.zalando.org/create_fn"},
	{prefix: "kopf.zalando.org", id: "create/task_abc", v2: "kopf.zalando.org/create.task_abc", v1: "kopf.zalando.org/create.task_abc"},
	{prefix: "kopf.zalando.org", id: "<lambda>", v2: "kopf.zalando.org/_lambda_", v1: "kopf.zalando.org/_lambda_"},
	{prefix: "kopf.zalando.org", id: "update_fn/spec.field", v2: "kopf.zalando.org/update_fn.spec.field", v1: "kopf.zalando.org/update_fn.spec.field"},
	{prefix: "kopf.zalando.org", id: strings.Repeat("x", 40), v2: "kopf.zalando.org/" + strings.Repeat("x", 40), v1: "kopf.zalando.org/" + strings.Repeat("x", 40)},
	// 17+46 = 63: the longest name that V1 keeps intact under Kopf's prefix.
	{prefix: "kopf.zalando.org", id: strings.Repeat("x", 46), v2: "kopf.zalando.org/" + strings.Repeat("x", 46), v1: "kopf.zalando.org/" + strings.Repeat("x", 46)},
	{prefix: "kopf.zalando.org", id: strings.Repeat("x", 47), v2: "kopf.zalando.org/" + strings.Repeat("x", 47), v1: "kopf.zalando.org/" + strings.Repeat("x", 39) + "-xRCOAQ"},
	// 63: the longest name that V2 keeps intact.
	{prefix: "kopf.zalando.org", id: strings.Repeat("x", 63), v2: "kopf.zalando.org/" + strings.Repeat("x", 63), v1: "kopf.zalando.org/" + strings.Repeat("x", 39) + "-GINbRg"},
	{prefix: "kopf.zalando.org", id: strings.Repeat("x", 64), v2: "kopf.zalando.org/" + strings.Repeat("x", 56) + "-SItAqA", v1: "kopf.zalando.org/" + strings.Repeat("x", 39) + "-SItAqA"},
	{prefix: "kopf.zalando.org", id: strings.Repeat(".", 64), v2: "kopf.zalando.org/" + strings.Repeat(".", 56) + "-Okpb4g", v1: "kopf.zalando.org/" + strings.Repeat(".", 39) + "-Okpb4g"},
	// V2 hashes the raw id, V1 the safe name: the suffixes differ when "/" is replaced.
	{prefix: "kopf.zalando.org", id: "parent/" + strings.Repeat("child", 12), v2: "kopf.zalando.org/parent." + strings.Repeat("child", 9) + "chil-51sWYA", v1: "kopf.zalando.org/parent." + strings.Repeat("child", 6) + "ch-l7UgRg"},
	{prefix: "kopf.zalando.org", id: "on_field_spec_a-very-long-field-name-which-exceeds-the-limit/sub1", v2: "kopf.zalando.org/on_field_spec_a-very-long-field-name-which-exceeds-the-l-HsVldA", v1: "kopf.zalando.org/on_field_spec_a-very-long-field-name-wh-1LX0CQ"},
	{prefix: "kopf.zalando.org", id: "create_fn-ofDRS", v2: "kopf.zalando.org/create_fn-ofDRS", v1: "kopf.zalando.org/create_fn-ofDRS"},
	{prefix: "kopf.zalando.org", id: "touch-dummy", v2: "kopf.zalando.org/touch-dummy", v1: "kopf.zalando.org/touch-dummy"},
	{prefix: "kopf.zalando.org", id: "last-handled-configuration", v2: "kopf.zalando.org/last-handled-configuration", v1: "kopf.zalando.org/last-handled-configuration"},
	{prefix: "my-operator.example.com", id: "a_b.c-d/e", v2: "my-operator.example.com/a_b.c-d.e", v1: "my-operator.example.com/a_b.c-d.e"},
	{prefix: "my-operator.example.com", id: "x", v2: "my-operator.example.com/x", v1: "my-operator.example.com/x"},
	{prefix: "my-operator.example.com", id: strings.Repeat("x", 39), v2: "my-operator.example.com/" + strings.Repeat("x", 39), v1: "my-operator.example.com/" + strings.Repeat("x", 39)},
	{prefix: "my-operator.example.com", id: strings.Repeat("x", 40), v2: "my-operator.example.com/" + strings.Repeat("x", 40), v1: "my-operator.example.com/" + strings.Repeat("x", 32) + "-tEokcg"},
	{prefix: "my-operator.example.com", id: strings.Repeat("y", 40), v2: "my-operator.example.com/" + strings.Repeat("y", 40), v1: "my-operator.example.com/" + strings.Repeat("y", 32) + "-VZlvhw"},
	{prefix: "my-operator.example.com", id: strings.Repeat("z", 40), v2: "my-operator.example.com/" + strings.Repeat("z", 40), v1: "my-operator.example.com/" + strings.Repeat("z", 32) + "-LlPQyA"},
	{prefix: "my-operator.example.com", id: strings.Repeat("y", 64), v2: "my-operator.example.com/" + strings.Repeat("y", 56) + "-0d251g", v1: "my-operator.example.com/" + strings.Repeat("y", 32) + "-0d251g"},
	{prefix: "my-operator.example.com", id: strings.Repeat("z", 64), v2: "my-operator.example.com/" + strings.Repeat("z", 56) + "-E7wvIA", v1: "my-operator.example.com/" + strings.Repeat("z", 32) + "-E7wvIA"},
	// The digest's base64 has both altchars ("-" for "+", "." for "/").
	{prefix: "my-operator.example.com", id: strings.Repeat("fn", 323), v2: "my-operator.example.com/" + strings.Repeat("fn", 28) + "-Az-r.g", v1: "my-operator.example.com/" + strings.Repeat("fn", 16) + "-Az-r.g"},
	{prefix: "lengthy-operator-name-to-hit-63-chars.example.com", id: "update/sub1", v2: "lengthy-operator-name-to-hit-63-chars.example.com/update.sub1", v1: "lengthy-operator-name-to-hit-63-chars.example.com/update.sub1"},
	// Kopf forbids an empty prefix in its storages, but the naming itself allows it.
	{prefix: "", id: strings.Repeat("x", 64), v2: strings.Repeat("x", 56) + "-SItAqA", v1: strings.Repeat("x", 56) + "-SItAqA"},
}

func TestKeysV2(t *testing.T) {
	for _, tc := range keyFixtures {
		got := Keys{Prefix: tc.prefix, V1: true}.V2(tc.id)
		if got != tc.v2 {
			t.Errorf("V2(%q, %q) = %q, want %q", tc.prefix, tc.id, got, tc.v2)
		}
		if name := got[len(tc.prefix):]; len(strings.TrimPrefix(name, "/")) > MaxNameLength {
			t.Errorf("V2(%q, %q): name part %q exceeds %d", tc.prefix, tc.id, name, MaxNameLength)
		}
	}
}

func TestKeysV1(t *testing.T) {
	for _, tc := range keyFixtures {
		got := Keys{Prefix: tc.prefix, V1: true}.V1Key(tc.id)
		if got != tc.v1 {
			t.Errorf("V1Key(%q, %q) = %q, want %q", tc.prefix, tc.id, got, tc.v1)
		}
		if len(got) > MaxNameLength {
			t.Errorf("V1Key(%q, %q) = %q exceeds %d", tc.prefix, tc.id, got, MaxNameLength)
		}
	}
}

func TestKeysMake(t *testing.T) {
	for _, tc := range keyFixtures {
		want := []string{tc.v2}
		if tc.v1 != tc.v2 {
			want = append(want, tc.v1)
		}
		if got := (Keys{Prefix: tc.prefix, V1: true}).Make(tc.id); !reflect.DeepEqual(got, want) {
			t.Errorf("Make(%q, %q) with V1 = %q, want %q", tc.prefix, tc.id, got, want)
		}
		if got := (Keys{Prefix: tc.prefix}).Make(tc.id); !reflect.DeepEqual(got, []string{tc.v2}) {
			t.Errorf("Make(%q, %q) without V1 = %q, want only the V2 key %q", tc.prefix, tc.id, got, tc.v2)
		}
	}
}

func TestSuffix(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"create_fn", "-AZjFuA"},
		{strings.Repeat("x", 64), "-SItAqA"},
		{strings.Repeat("fn", 323), "-Az-r.g"},
		{strings.Repeat(".", 64), "-Okpb4g"},
		{"a_b.c-d/e", "-2gs1jQ"},
		{"", "-EnHPJQ"},
	} {
		if got := Suffix(tc.in); got != tc.want {
			t.Errorf("Suffix(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSafeName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"create_fn", "create_fn"},
		{"create/task_abc", "create.task_abc"},
		{"a/b/c", "a.b.c"},
		{"<lambda>", "_lambda_"},
		{"fn/<lambda>/x", "fn._lambda_.x"},
		{"update_fn/spec.field", "update_fn.spec.field"},
		{"", ""},
	} {
		if got := SafeName(tc.in); got != tc.want {
			t.Errorf("SafeName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMark(t *testing.T) {
	owned := func(kinds ...string) []any {
		var out []any
		for _, k := range kinds {
			out = append(out, map[string]any{"apiVersion": "apps/v1", "kind": k, "name": "x", "uid": "u"})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"replicaset of deployment", map[string]any{"kind": "ReplicaSet", "metadata": map[string]any{"ownerReferences": owned("Deployment")}}, "create_fn-ofDRS"},
		{"replicaset of several owners", map[string]any{"kind": "ReplicaSet", "metadata": map[string]any{"ownerReferences": owned("Something", "Deployment")}}, "create_fn-ofDRS"},
		{"replicaset of other owner", map[string]any{"kind": "ReplicaSet", "metadata": map[string]any{"ownerReferences": owned("StatefulSet")}}, "create_fn"},
		{"orphan replicaset", map[string]any{"kind": "ReplicaSet", "metadata": map[string]any{}}, "create_fn"},
		{"replicaset without metadata", map[string]any{"kind": "ReplicaSet"}, "create_fn"},
		{"pod of deployment", map[string]any{"kind": "Pod", "metadata": map[string]any{"ownerReferences": owned("Deployment")}}, "create_fn"},
		{"empty body", map[string]any{}, "create_fn"},
		{"nil body", nil, "create_fn"},
	} {
		if got := Mark("create_fn", tc.body); got != tc.want {
			t.Errorf("%s: Mark = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestMarkedKeys(t *testing.T) {
	body := map[string]any{"kind": "ReplicaSet", "metadata": map[string]any{"ownerReferences": []any{map[string]any{"kind": "Deployment"}}}}
	got := Keys{Prefix: KnownPrefix, V1: true}.Make(Mark("create_fn", body))
	if want := []string{"kopf.zalando.org/create_fn-ofDRS"}; !reflect.DeepEqual(got, want) {
		t.Errorf("marked keys = %q, want %q", got, want)
	}
}

func TestMarker(t *testing.T) {
	for _, tc := range []struct{ prefix, want string }{
		{"kopf.zalando.org", ""},
		{"kopf.example.com", ""},
		{"my-op.example.com", "my-op.example.com/kopf-managed"},
		{"kopfish.example.com", "kopfish.example.com/kopf-managed"},
		{"", ""},
	} {
		if got := (Keys{Prefix: tc.prefix}).Marker(); got != tc.want {
			t.Errorf("Marker(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
	}
}

func TestManagedPrefixes(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   map[string]any
		want map[string]bool
	}{
		{"none", map[string]any{"example.com/x": "1", "plain": "2"}, nil},
		{"kopf's own prefix", map[string]any{"kopf.zalando.org/create_fn": "{}"}, map[string]bool{"kopf.zalando.org": true}},
		{"kopf subdomain", map[string]any{"my.kopf.zalando.org/x": "1"}, map[string]bool{"my.kopf.zalando.org": true}},
		{"lookalike is not a subdomain", map[string]any{"notkopf.zalando.org/x": "1"}, nil},
		{"marked prefix", map[string]any{"a.example.com/kopf-managed": "yes", "a.example.com/create_fn": "{}", "b.example.com/x": "1"}, map[string]bool{"a.example.com": true}},
		{"marker without prefix does not count", map[string]any{"kopf-managed": "yes"}, nil},
		{"empty", map[string]any{}, nil},
	} {
		if got := ManagedPrefixes(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: ManagedPrefixes = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func BenchmarkKeysMakeShort(b *testing.B) {
	k := Keys{Prefix: KnownPrefix, V1: true}
	b.ReportAllocs()
	for b.Loop() {
		_ = k.Make("create_fn")
	}
}

func BenchmarkKeysMakeSubhandler(b *testing.B) {
	k := Keys{Prefix: KnownPrefix, V1: true}
	b.ReportAllocs()
	for b.Loop() {
		_ = k.Make("create_fn/sub1")
	}
}

func BenchmarkKeysMakeLong(b *testing.B) {
	k := Keys{Prefix: KnownPrefix, V1: true}
	id := "on_field_spec_a-very-long-field-name-which-exceeds-the-limit/sub1"
	b.ReportAllocs()
	for b.Loop() {
		_ = k.Make(id)
	}
}

func BenchmarkSuffix(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Suffix("on_field_spec_a-very-long-field-name-which-exceeds-the-limit/sub1")
	}
}
