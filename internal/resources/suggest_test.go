package resources

import (
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"pods", "pods", 0},
		{"pod", "pods", 1},
		{"kopfexampls", "kopfexamples", 1},
		{"replcias", "replicas", 1},
		{"replcas", "replicas", 1},
		{"kitten", "sitting", 3},
		{"spce", "spec", 1},
		{"ab", "ba", 1},
	} {
		if got := distance(tc.a, tc.b); got != tc.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := distance(tc.b, tc.a); got != tc.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestClosest(t *testing.T) {
	for _, tc := range []struct {
		word       string
		candidates []string
		want       string
		ok         bool
	}{
		{"replica", []string{"replicas", "selector", "template"}, "replicas", true},
		{"Replicas", []string{"replicas"}, "replicas", true},
		{"fild", []string{"field", "items"}, "field", true},
		{"x", []string{"y"}, "y", true},
		{"x", []string{"yz"}, "", false},
		{"duration", []string{"replicas"}, "", false},
		// Ties go to the nearer with case, then to the first.
		{"ab", []string{"ac", "aa"}, "ac", true},
		{"Ab", []string{"ac", "Aa"}, "Aa", true},
		{"anything", nil, "", false},
	} {
		got, ok := closest(tc.word, tc.candidates)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("closest(%q, %q) = %q, %v; want %q, %v", tc.word, tc.candidates, got, ok, tc.want, tc.ok)
		}
	}
}

func TestSuggest(t *testing.T) {
	all := []Resource{
		{Group: "kopf.dev", Version: "v1", Plural: "kopfexamples", Singular: "kopfexample", Kind: "KopfExample", ShortNames: []string{"kex"}, Preferred: true},
		{Version: "v1", Plural: "pods", Singular: "pod", Kind: "Pod", ShortNames: []string{"po"}, Preferred: true},
		{Group: "apps", Version: "v1", Plural: "deployments", Singular: "deployment", Kind: "Deployment", ShortNames: []string{"deploy"}, Preferred: true},
		{Group: "apps", Version: "v1beta1", Plural: "statefulsets", Kind: "StatefulSet"},
	}
	for _, tc := range []struct{ in, want string }{
		{"kopfexampls", "kopfexamples"},
		{"kopfexample", ""}, // resolves: nothing to suggest
		{"KopfExampel", "KopfExample"},
		{"kopfexampls.kopf.dev", "kopfexamples.kopf.dev"},
		{"kopfexamples.kopf.de", "kopfexamples.kopf.dev"},
		{"kopf.dev/v1/kopfexampls", "kopf.dev/v1/kopfexamples"},
		{"deploymnets", "deployments"},
		{"podz", "pods"},
		{"statefulset", ""}, // only in a version that is not preferred
		{"apps/v1beta1/statefulset", "apps/v1beta1/StatefulSet"},
		{"widgets", ""},
	} {
		sel, err := Parse(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sel.Select(all); err == nil {
			if tc.want != "" {
				t.Errorf("%q resolves; the test wants a suggestion", tc.in)
			}
			continue
		}
		if got := sel.Suggest(all); got != tc.want {
			t.Errorf("Suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFieldInSchema(t *testing.T) {
	obj := func(props map[string]any) map[string]any {
		return map[string]any{"type": "object", "properties": props}
	}
	schema := obj(map[string]any{
		"spec": obj(map[string]any{
			"replicas": map[string]any{"type": "integer"},
			"selector": obj(map[string]any{"app": map[string]any{"type": "string"}}),
			"free":     map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
			"labels":   map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
			"nested":   map[string]any{"type": "object", "additionalProperties": obj(map[string]any{"size": map[string]any{"type": "integer"}})},
			"items":    map[string]any{"type": "array", "items": obj(map[string]any{"name": map[string]any{"type": "string"}})},
			"template": map[string]any{"type": "object", "x-kubernetes-embedded-resource": true, "properties": map[string]any{"spec": map[string]any{"type": "object"}}},
		}),
		"status": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
	})
	for _, tc := range []struct {
		path    string
		known   bool
		suggest string
	}{
		{"spec", true, ""},
		{"spec.replicas", true, ""},
		{"spec.replica", false, "spec.replicas"},
		{"spec.selector.app", true, ""},
		{"spec.selector.ap", false, "spec.selector.app"},
		{"spec.selectro.app", false, "spec.selector.app"},
		{"spec.unrelated", false, ""},
		{"spec.replicas.deeper", false, ""},
		{"spec.free.anything.below", true, ""},
		{"spec.labels.any-key", true, ""},
		{"spec.labels.any-key.below", false, ""},
		{"spec.nested.k.size", true, ""},
		{"spec.nested.k.sise", false, "spec.nested.k.size"},
		{"spec.items.0.name", true, ""},
		{"spec.template.metadata.labels", true, ""},
		{"status.whatever", true, ""},
		{"metadata.labels.app", true, ""},
		{"spce.replicas", false, "spec.replicas"},
	} {
		known, suggest := FieldInSchema(schema, splitPath(tc.path))
		if known != tc.known || joinPath(suggest) != tc.suggest {
			t.Errorf("FieldInSchema(%q) = %v, %q; want %v, %q", tc.path, known, joinPath(suggest), tc.known, tc.suggest)
		}
	}
	if known, _ := FieldInSchema(nil, []string{"spec", "x"}); !known {
		t.Error("no schema: a path is not judged")
	}
}

func TestSchemaOf(t *testing.T) {
	crd := map[string]any{"spec": map[string]any{"versions": []any{
		map[string]any{"name": "v1alpha1", "schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "string"}}},
		map[string]any{"name": "v1", "schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object"}}},
	}}}
	if got := SchemaOf(crd, "v1"); got["type"] != "object" {
		t.Errorf("SchemaOf(v1) = %v", got)
	}
	if got := SchemaOf(crd, "v2"); got != nil {
		t.Errorf("SchemaOf(v2) = %v, want nil", got)
	}
}

func splitPath(s string) []string { return strings.Split(s, ".") }

func joinPath(p []string) string { return strings.Join(p, ".") }
