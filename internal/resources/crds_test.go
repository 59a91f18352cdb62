package resources

import (
	"reflect"
	"testing"
)

func TestFromCRD(t *testing.T) {
	kex := map[string]any{
		"spec": map[string]any{
			"group": "kopf.dev", "scope": "Namespaced",
			"names": map[string]any{"plural": "kopfexamples", "singular": "kopfexample", "kind": "KopfExample",
				"shortNames": []any{"kopfexes", "kex"}, "categories": []any{"all"}},
			"versions": []any{
				map[string]any{"name": "v1", "served": true},
				map[string]any{"name": "v0", "served": false},
				map[string]any{"name": "v2beta1", "served": true},
			},
		},
	}
	want := []Resource{
		{Group: "kopf.dev", Version: "v1", Plural: "kopfexamples", Singular: "kopfexample", Kind: "KopfExample",
			ShortNames: []string{"kopfexes", "kex"}, Categories: []string{"all"}, Namespaced: true, Preferred: true},
		{Group: "kopf.dev", Version: "v2beta1", Plural: "kopfexamples", Singular: "kopfexample", Kind: "KopfExample",
			ShortNames: []string{"kopfexes", "kex"}, Categories: []string{"all"}, Namespaced: true},
	}
	if got := FromCRD(kex); !reflect.DeepEqual(got, want) {
		t.Errorf("FromCRD = %+v\nwant %+v", got, want)
	}
	for _, sel := range []string{"kopfexamples", "kex", "KopfExample", "kopfexamples.kopf.dev", "kopf.dev/v2beta1/kopfexamples"} {
		s, err := Parse(sel)
		if err != nil {
			t.Fatal(err)
		}
		if found, err := s.Select(FromCRD(kex)); err != nil || len(found) == 0 {
			t.Errorf("%s selects nothing of the CRD: %v", sel, err)
		}
	}

	cluster := map[string]any{"spec": map[string]any{
		"group": "kopf.dev", "scope": "Cluster",
		"names":    map[string]any{"plural": "clusterkopfpeerings", "kind": "ClusterKopfPeering"},
		"versions": []any{map[string]any{"name": "v1", "served": true}},
	}}
	if got := FromCRD(cluster); len(got) != 1 || got[0].Namespaced {
		t.Errorf("a cluster-scoped CRD: %+v", got)
	}

	for name, bad := range map[string]map[string]any{
		"empty":          {},
		"spec a string":  {"spec": "x"},
		"no group":       {"spec": map[string]any{"names": map[string]any{"plural": "x"}, "versions": []any{map[string]any{"name": "v1", "served": true}}}},
		"versions a map": {"spec": map[string]any{"group": "g", "names": map[string]any{"plural": "x"}, "versions": map[string]any{}}},
		"version wrong":  {"spec": map[string]any{"group": "g", "names": map[string]any{"plural": "x"}, "versions": []any{"v1", 3}}},
	} {
		if got := FromCRD(bad); got != nil {
			t.Errorf("%s: %+v, want nothing", name, got)
		}
	}
}
