package resources

import "testing"

func TestNamespaces(t *testing.T) {
	tests := []struct {
		patterns []string
		ns       string
		want     bool
	}{
		{nil, "anything", true},
		{[]string{"default"}, "default", true},
		{[]string{"default"}, "other", false},
		{[]string{"myapp-*,!*-pr-*,*-pr-123"}, "myapp-live", true},
		{[]string{"myapp-*,!*-pr-*,*-pr-123"}, "myapp-pr-123", true},
		{[]string{"myapp-*,!*-pr-*,*-pr-123"}, "myapp-pr-456", false},
		{[]string{"myapp-*,!*-pr-*,*-pr-123"}, "otherapp-pr-123", false}, // the first glob is decisive
		{[]string{"!kube-*"}, "default", true},
		{[]string{"!kube-*"}, "kube-system", false},
		{[]string{"ns-*,!ns-skip"}, "ns-a", true},
		{[]string{"ns-*,!ns-skip"}, "ns-skip", false},
		{[]string{"ns-*,!ns-skip"}, "other", false},
		{[]string{"a", "team-?"}, "team-x", true},
		{[]string{"a", "team-?"}, "team-xy", false},
	}
	for _, tt := range tests {
		if got := NewNamespaces(tt.patterns).Match(tt.ns); got != tt.want {
			t.Errorf("%v.Match(%q) = %v, want %v", tt.patterns, tt.ns, got, tt.want)
		}
	}
	if names, ok := NewNamespaces([]string{"a", "b"}).Exact(); !ok || len(names) != 2 {
		t.Errorf("plain names are exact")
	}
	if _, ok := NewNamespaces([]string{"a", "b-*"}).Exact(); ok {
		t.Errorf("globs are not exact")
	}
	// Found by FuzzNamespaces: the name watched must be the name matched.
	if _, ok := NewNamespaces([]string{`\\0`}).Exact(); ok {
		t.Errorf("a backslash escapes in a glob, so a pattern with one is not exact")
	}
	if names, ok := NewNamespaces([]string{" a "}).Exact(); !ok || names[0] != "a" {
		t.Errorf("an exact pattern is trimmed as the globs are: %q", names)
	}
}
