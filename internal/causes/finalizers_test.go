package causes

import (
	"reflect"
	"testing"

	"github.com/kopfgo/kopfgo/patch"
)

func bodyWith(deleting bool, finalizers any) map[string]any {
	meta := map[string]any{"name": "kex"}
	if deleting {
		meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
	}
	if finalizers != nil {
		meta["finalizers"] = finalizers
	}
	return map[string]any{"metadata": meta}
}

func TestIsDeleting(t *testing.T) {
	tests := []struct {
		body map[string]any
		want bool
	}{
		{nil, false},
		{map[string]any{}, false},
		{map[string]any{"metadata": map[string]any{}}, false},
		{map[string]any{"metadata": map[string]any{"deletionTimestamp": nil}}, false},
		{map[string]any{"metadata": map[string]any{"deletionTimestamp": "2026-01-01T00:00:00Z"}}, true},
		{map[string]any{"metadata": "corrupt"}, false},
	}
	for _, tt := range tests {
		if got := IsDeleting(tt.body); got != tt.want {
			t.Errorf("IsDeleting(%v) = %v, want %v", tt.body, got, tt.want)
		}
	}
}

func TestHasFinalizer(t *testing.T) {
	tests := []struct {
		finalizers any
		want       bool
	}{
		{nil, false},
		{[]any{}, false},
		{[]any{"other"}, false},
		{[]any{ourFinalizer}, true},
		{[]any{"a", ourFinalizer, "b"}, true},
		{[]string{"a", ourFinalizer}, true},
		{[]any{1, ourFinalizer + "x"}, false},
		{"not a list", false},
	}
	for _, tt := range tests {
		if got := HasFinalizer(bodyWith(false, tt.finalizers), ourFinalizer); got != tt.want {
			t.Errorf("HasFinalizer(%v) = %v, want %v", tt.finalizers, got, tt.want)
		}
	}
}

func TestAddRemoveFinalizer(t *testing.T) {
	const f = ourFinalizer
	tests := []struct {
		name string
		body map[string]any
		ops  []string // "add" or "remove", applied in order to one patch
		want any      // metadata.finalizers in the patch; nil when untouched
	}{
		{"add to none", bodyWith(false, nil), []string{"add"}, []any{f}},
		{"add keeps others, in order", bodyWith(false, []any{"a", "b"}), []string{"add"}, []any{"a", "b", f}},
		{"add when present: nothing", bodyWith(false, []any{"a", f}), []string{"add"}, nil},
		{"add twice: once", bodyWith(false, []any{"a"}), []string{"add", "add"}, []any{"a", f}},
		{"add to a typed list", bodyWith(false, []string{"a"}), []string{"add"}, []any{"a", f}},
		{"remove keeps others", bodyWith(false, []any{"a", f, "b"}), []string{"remove"}, []any{"a", "b"}},
		{"remove the last: empty list, not null", bodyWith(false, []any{f}), []string{"remove"}, []any{}},
		{"remove duplicates too", bodyWith(false, []any{f, "a", f}), []string{"remove"}, []any{"a"}},
		{"remove when absent: nothing", bodyWith(false, []any{"a"}), []string{"remove"}, nil},
		{"add then remove in one patch", bodyWith(false, []any{"a"}), []string{"add", "remove"}, []any{"a"}},
		{"remove then add in one patch", bodyWith(false, []any{"a", f}), []string{"remove", "add"}, []any{"a", f}},
		{"remove while deleting", bodyWith(true, []any{f, "b"}), []string{"remove"}, []any{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before any
			if m, ok := tt.body["metadata"].(map[string]any); ok {
				before = clone(m["finalizers"])
			}
			var p patch.Patch
			for _, op := range tt.ops {
				switch op {
				case "add":
					AddFinalizer(tt.body, &p, f)
				case "remove":
					RemoveFinalizer(tt.body, &p, f)
				}
			}
			var got any
			if p.Has("metadata", "finalizers") {
				got = p.Map()["metadata"].(map[string]any)["finalizers"]
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("patch finalizers = %#v, want %#v", got, tt.want)
			}
			if after := tt.body["metadata"].(map[string]any)["finalizers"]; !reflect.DeepEqual(after, before) {
				t.Errorf("body modified: %#v, was %#v", after, before)
			}
		})
	}
}

func clone(v any) any {
	switch t := v.(type) {
	case []any:
		return append([]any(nil), t...)
	case []string:
		return append([]string(nil), t...)
	}
	return v
}
