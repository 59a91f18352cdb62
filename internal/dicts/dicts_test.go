package dicts

import (
	"reflect"
	"testing"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		ok   bool
	}{
		{"spec.field", []string{"spec", "field"}, true},
		{"spec", []string{"spec"}, true},
		{"", nil, false},
		{"  ", nil, false},
		{"spec..x", nil, false},
		{".spec", nil, false},
		{"spec.", nil, false},
	}
	for _, tt := range tests {
		got, err := ParsePath(tt.in)
		if (err == nil) != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParsePath(%q) = %v, %v", tt.in, got, err)
		}
	}
}

func TestGetSetRemove(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{"a": map[string]any{"b": 1}, "s": "x"}}
	if v, ok := Get(obj, []string{"spec", "a", "b"}); !ok || v != 1 {
		t.Errorf("Get = %v %v", v, ok)
	}
	if _, ok := Get(obj, []string{"spec", "s", "deeper"}); ok {
		t.Errorf("a path through a string exists")
	}
	if _, ok := Get(nil, []string{"x"}); ok {
		t.Errorf("nil has fields")
	}
	if v, ok := Get(obj, nil); !ok || !reflect.DeepEqual(v, obj) {
		t.Errorf("the empty path is the object itself")
	}
	Set(obj, []string{"spec", "s", "new"}, 2) // replaces the non-map intermediate
	Set(obj, []string{"status", "phase"}, "Running")
	if String(obj, "status", "phase") != "Running" || Map(obj, "spec", "s")["new"] != 2 {
		t.Errorf("Set failed: %v", obj)
	}
	Remove(obj, []string{"status", "phase"})
	Remove(obj, []string{"nowhere", "x"})
	if _, ok := Get(obj, []string{"status", "phase"}); ok {
		t.Errorf("Remove failed")
	}
}

func TestDeepCopy(t *testing.T) {
	orig := map[string]any{"a": []any{map[string]any{"b": 1}}, "c": "d"}
	cp := DeepCopyMap(orig)
	cp["a"].([]any)[0].(map[string]any)["b"] = 2
	if orig["a"].([]any)[0].(map[string]any)["b"] != 1 {
		t.Errorf("DeepCopyMap shares nested maps")
	}
	if DeepCopyMap(nil) != nil {
		t.Errorf("nil copies to non-nil")
	}
}

func TestFalsy(t *testing.T) {
	for _, v := range []any{nil, map[string]any{}, []any{}, "", false, 0, int64(0), 0.0, uint8(0)} {
		if !Falsy(v) {
			t.Errorf("Falsy(%#v) = false", v)
		}
	}
	for _, v := range []any{map[string]any{"a": nil}, []any{nil}, "x", true, 1, int64(-1), 0.5, struct{}{}} {
		if Falsy(v) {
			t.Errorf("Falsy(%#v) = true", v)
		}
	}
}
