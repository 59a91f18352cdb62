package patch

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestSectionsAndSplit(t *testing.T) {
	var p Patch
	if !p.IsEmpty() {
		t.Fatal("zero patch not empty")
	}
	p.Spec()["greeting"] = "hello"
	p.Spec()["obsolete"] = nil
	p.Status()["state"] = "initialized"
	p.SetAnnotation("a", "1")
	p.RemoveAnnotation("b")
	p.Labels()["l"] = "v"
	main, status := p.Split()
	wantMain := map[string]any{
		"spec":     map[string]any{"greeting": "hello", "obsolete": nil},
		"metadata": map[string]any{"annotations": map[string]any{"a": "1", "b": nil}, "labels": map[string]any{"l": "v"}},
	}
	if !reflect.DeepEqual(main, wantMain) {
		t.Errorf("main = %v", main)
	}
	if !reflect.DeepEqual(status, map[string]any{"status": map[string]any{"state": "initialized"}}) {
		t.Errorf("status = %v", status)
	}
	if !p.Has("metadata", "annotations", "b") || p.Has("metadata", "annotations", "c") {
		t.Errorf("Has is wrong")
	}
}

func TestSplitWithoutStatus(t *testing.T) {
	var p Patch
	p.Status()
	main, status := p.Split()
	if main != nil || status != nil {
		t.Errorf("an empty status section must send nothing: %v %v", main, status)
	}
}

func TestMergeAndApply(t *testing.T) {
	var a, b Patch
	a.Spec()["x"] = 1
	a.Spec()["list"] = []any{1, 2}
	b.Spec()["y"] = 2
	b.Spec()["list"] = []any{3}
	b.Set([]string{"metadata", "labels", "gone"}, nil)
	a.Merge(&b)
	body := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"gone": "x", "kept": "y"}},
		"spec":     map[string]any{"x": 0, "z": 9},
		"status":   map[string]any(nil),
	}
	got := a.Apply(body)
	want := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"kept": "y"}},
		"spec":     map[string]any{"x": 1, "y": 2, "z": 9, "list": []any{3}},
		"status":   map[string]any(nil),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Apply = %v\nwant    %v", got, want)
	}
	if body["spec"].(map[string]any)["x"] != 0 {
		t.Errorf("Apply modified its input")
	}
	data, err := json.Marshal(&a)
	if err != nil || string(data) != `{"metadata":{"labels":{"gone":null}},"spec":{"list":[3],"x":1,"y":2}}` {
		t.Errorf("JSON = %s, %v", data, err)
	}
	// Merging must copy: later changes to b do not leak into a.
	b.Spec()["y"] = 3
	if a.Spec()["y"] != 2 {
		t.Errorf("Merge shares maps with its argument")
	}
}

func TestApplyIntoTypedNilMap(t *testing.T) {
	var p Patch
	p.Status()["x"] = 1
	got := p.Apply(map[string]any{"status": map[string]any(nil)})
	if !reflect.DeepEqual(got["status"], map[string]any{"x": 1}) {
		t.Errorf("got %v", got)
	}
}
