package resources

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want Selector
		err  string
	}{
		{"kopfexamples", Selector{Name: "kopfexamples"}, ""},
		{"KopfExample", Selector{Name: "KopfExample"}, ""},
		{"kopfexamples.kopf.dev", Selector{Group: "kopf.dev", Name: "kopfexamples", GroupSet: true}, ""},
		{"deployments.apps", Selector{Group: "apps", Name: "deployments", GroupSet: true}, ""},
		{"pods.v1", Selector{Version: "v1", Name: "pods", GroupSet: true}, ""},
		{"pods.v1beta1.metrics.k8s.io", Selector{Group: "metrics.k8s.io", Version: "v1beta1", Name: "pods", GroupSet: true}, ""},
		{"kopf.dev/v1/kopfexamples", Selector{Group: "kopf.dev", Version: "v1", Name: "kopfexamples", GroupSet: true}, ""},
		{"v1/pods", Selector{Version: "v1", Name: "pods", GroupSet: true}, ""},
		{"", Selector{}, "empty resource"},
		{"kopf.dev/kopfexamples", Selector{}, "not a version"},
		{"a/b/c/d", Selector{}, "too many parts"},
		{"kopf.dev//x", Selector{}, "empty part"},
		{".kopf.dev", Selector{}, "empty part"},
		{" kopfexamples ", Selector{Name: "kopfexamples"}, ""},
		// Found by FuzzParse: an inner space made a selector that never resolves.
		{"kopfexamples .kopf.dev", Selector{}, "contains whitespace"},
		{"kopf.dev/v1/kopf examples", Selector{}, "contains whitespace"},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if tt.err != "" {
			if err == nil || !contains(err.Error(), tt.err) {
				t.Errorf("Parse(%q) err = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

var discovered = []Resource{
	{Group: "kopf.dev", Version: "v1", Plural: "kopfexamples", Singular: "kopfexample", Kind: "KopfExample", ShortNames: []string{"kex"}, Preferred: true, Namespaced: true},
	{Group: "kopf.dev", Version: "v2beta1", Plural: "kopfexamples", Singular: "kopfexample", Kind: "KopfExample", Preferred: false, Namespaced: true},
	{Group: "", Version: "v1", Plural: "pods", Singular: "pod", Kind: "Pod", ShortNames: []string{"po"}, Preferred: true, Namespaced: true},
	{Group: "metrics.k8s.io", Version: "v1beta1", Plural: "pods", Kind: "PodMetrics", Preferred: true, Namespaced: true},
	{Group: "a.example", Version: "v1", Plural: "widgets", Kind: "Widget", Preferred: true},
	{Group: "b.example", Version: "v1", Plural: "widgets", Kind: "Widget", Preferred: true},
}

func TestSelect(t *testing.T) {
	tests := []struct {
		sel  string
		want []string
		err  error
	}{
		{"kopfexamples", []string{"kopfexamples.v1.kopf.dev"}, nil}, // preferred version only
		{"KopfExample", []string{"kopfexamples.v1.kopf.dev"}, nil},
		{"kex", []string{"kopfexamples.v1.kopf.dev"}, nil},
		{"kopfexample", []string{"kopfexamples.v1.kopf.dev"}, nil},
		{"kopfexamples.kopf.dev", []string{"kopfexamples.v1.kopf.dev"}, nil},
		{"kopf.dev/v2beta1/kopfexamples", []string{"kopfexamples.v2beta1.kopf.dev"}, nil},
		{"pods", []string{"pods.v1"}, nil}, // core wins, as in kubectl
		{"pods.metrics.k8s.io", []string{"pods.v1beta1.metrics.k8s.io"}, nil},
		{"widgets", nil, ErrAmbiguous},
		{"widgets.a.example", []string{"widgets.v1.a.example"}, nil},
		{"gadgets", nil, ErrUnresolved},
		{"kopfexamples.other.dev", nil, ErrUnresolved},
	}
	for _, tt := range tests {
		sel, err := Parse(tt.sel)
		if err != nil {
			t.Fatal(err)
		}
		got, err := sel.Select(discovered)
		if !errors.Is(err, tt.err) {
			t.Errorf("Select(%q) err = %v, want %v", tt.sel, err, tt.err)
			continue
		}
		var names []string
		for _, r := range got {
			names = append(names, r.String())
		}
		if len(names) != len(tt.want) || (len(names) > 0 && names[0] != tt.want[0]) {
			t.Errorf("Select(%q) = %v, want %v", tt.sel, names, tt.want)
		}
	}
}

func TestResourceHelpers(t *testing.T) {
	r := Resource{Group: "kopf.dev", Version: "v1", Plural: "kopfexamples", Subresources: []string{"status"}}
	if r.APIVersion() != "kopf.dev/v1" || !r.HasStatus() || r.GVR().Resource != "kopfexamples" {
		t.Errorf("helpers wrong for %+v", r)
	}
	core := Resource{Version: "v1", Plural: "pods"}
	if core.APIVersion() != "v1" || core.HasStatus() {
		t.Errorf("helpers wrong for %+v", core)
	}
}
