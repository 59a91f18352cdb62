package resources

import (
	"slices"
	"testing"
)

// Selectors come from handler registrations and namespace patterns from the
// command line: anything a user types must be either read or rejected with
// an error, never crash, and what is read must read the same again.

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"kopfexamples", "KopfExample", "kex", "kopfexamples.kopf.dev", "pods.v1", "jobs.v1.batch",
		"kopf.dev/v1/kopfexamples", "v1/pods", "", " ", ".", "a.", ".b", "/", "a//b", "a/b/c/d", "x/pods",
		"pods.v1beta1.apps", "ünïcödé.grüp", "a b.c d",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sel, err := Parse(s)
		if err != nil {
			return
		}
		if sel.Name == "" {
			t.Fatalf("%q parsed with no name: %+v", s, sel)
		}
		again, err := Parse(sel.String())
		if err != nil || again != sel {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, sel, sel.String(), again, err)
		}
		r := Resource{Group: sel.Group, Version: "v1", Plural: sel.Name, Preferred: true}
		if sel.Version != "" {
			r.Version = sel.Version
		}
		if !sel.Matches(r) {
			t.Fatalf("%+v does not match the resource it names: %+v", sel, r)
		}
	})
}

func FuzzNamespaces(f *testing.F) {
	for _, p := range [][2]string{
		{"default", "default"}, {"team-*", "team-a"}, {"!kube-*", "kube-system"}, {"a,!b", "b"}, {"[", "["},
		{"*,!x,x", "x"}, {"\\", "a"}, {"?", "é"}, {" a , b ", "b"}, {",", ""}, {"[]a]", "]"},
	} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, pattern, ns string) {
		n := NewNamespaces([]string{pattern})
		got := n.Match(ns)
		if names, ok := n.Exact(); ok && got != slices.Contains(names, ns) {
			t.Fatalf("exact pattern %q: Match(%q) = %v", pattern, ns, got)
		}
	})
}
