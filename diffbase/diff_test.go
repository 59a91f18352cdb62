package diffbase

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// obj parses JSON test fixtures the way Fetch does (int64 for integers).
func obj(t testing.TB, s string) map[string]any {
	t.Helper()
	v, err := decodeValue([]byte(s))
	if err != nil {
		t.Fatalf("bad fixture %s: %v", s, err)
	}
	m, _ := v.(map[string]any)
	return m
}

func diffJSON(t testing.TB, d Diff) string {
	t.Helper()
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name     string
		old, new string // JSON; "" for nil
		want     string
	}{
		{"both absent", "", "", `[]`},
		{"equal", `{"spec":{"a":1}}`, `{"spec":{"a":1}}`, `[]`},
		{"creation is one root add", "", `{"spec":{"a":1}}`,
			`[["add",[],null,{"spec":{"a":1}}]]`},
		{"removal of everything is one root remove", `{"spec":{"a":1}}`, "",
			`[["remove",[],{"spec":{"a":1}},null]]`},
		// (compat: persistence-diff): lists are atomic.
		{"list grows: one change", `{"spec":{"items":[1,2]}}`, `{"spec":{"items":[1,2,3]}}`,
			`[["change",["spec","items"],[1,2],[1,2,3]]]`},
		{"list of maps is atomic too", `{"spec":{"l":[{"a":1}]}}`, `{"spec":{"l":[{"a":2}]}}`,
			`[["change",["spec","l"],[{"a":1}],[{"a":2}]]]`},
		// (compat: persistence-diff).
		{"label removed", `{"metadata":{"labels":{"l1":"a","l3":"v"}}}`, `{"metadata":{"labels":{"l1":"a"}}}`,
			`[["remove",["metadata","labels","l3"],"v",null]]`},
		// (compat: handlers-update).
		{"scalar changed", `{"spec":{"size":"1G"}}`, `{"spec":{"size":"2G"}}`,
			`[["change",["spec","size"],"1G","2G"]]`},
		{"subtree added whole, not recursed", `{"spec":{}}`, `{"spec":{"sub":{"a":1,"b":2}}}`,
			`[["add",["spec","sub"],null,{"a":1,"b":2}]]`},
		{"map replaced by a scalar", `{"spec":{"x":{"a":1}}}`, `{"spec":{"x":"flat"}}`,
			`[["change",["spec","x"],{"a":1},"flat"]]`},
		{"null is absence", `{"spec":{"x":null}}`, `{"spec":{"x":1}}`,
			`[["add",["spec","x"],null,1]]`},
		{"null and absent are equal", `{"spec":{"x":null}}`, `{"spec":{}}`, `[]`},
		{"empty map is not absence", `{"spec":{}}`, `{}`, `[["remove",["spec"],{},null]]`},
		// Kopf's order: added, removed, common; sorted within each group.
		{"order: added, removed, common, each sorted",
			`{"z":1,"c":1,"k":{"b":1,"a":1},"r2":1,"r1":1}`,
			`{"z":2,"c":2,"k":{"b":2,"a":2},"n2":1,"n1":1}`,
			`[["add",["n1"],null,1],["add",["n2"],null,1],` +
				`["remove",["r1"],1,null],["remove",["r2"],1,null],` +
				`["change",["c"],1,2],["change",["k","a"],1,2],["change",["k","b"],1,2],["change",["z"],1,2]]`},
		{"html characters are not escaped", `{"a":"x"}`, `{"a":"<&>"}`, `[["change",["a"],"x","<&>"]]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var old, new any
			if tt.old != "" {
				old = obj(t, tt.old)
			}
			if tt.new != "" {
				new = obj(t, tt.new)
			}
			if got := diffJSON(t, Compute(old, new)); got != tt.want {
				t.Errorf("Compute:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestComputeNumbersCompareByValue(t *testing.T) {
	// client-go gives int64, a stored diff-base parsed by encoding/json
	// float64: the same object must not look changed.
	old := map[string]any{"spec": map[string]any{"n": float64(3), "m": []any{float64(1), int32(2)}}}
	new := map[string]any{"spec": map[string]any{"n": int64(3), "m": []any{int(1), json.Number("2")}}}
	if d := Compute(old, new); len(d) != 0 {
		t.Errorf("int64 vs float64 of equal values: got %v, want no diff", d)
	}
	new["spec"].(map[string]any)["n"] = 3.5
	if d := Compute(old, new); len(d) != 1 || d[0].Op != Change {
		t.Errorf("3 vs 3.5: got %v, want one change", d)
	}
	big := map[string]any{"n": int64(1<<62 + 1)}
	bigger := map[string]any{"n": int64(1<<62 + 2)}
	if d := Compute(big, bigger); len(d) != 1 {
		t.Errorf("large int64s must not round together: got %v", d)
	}
}

func TestComputeTypedNilMapIsAbsent(t *testing.T) {
	var old map[string]any // what Fetch returns for a never-handled object
	new := map[string]any{"spec": map[string]any{"a": int64(1)}}
	d := Compute(old, new)
	want := `[["add",[],null,{"spec":{"a":1}}]]`
	if got := diffJSON(t, d); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if d[0].Old != nil {
		t.Errorf("Old = %#v, want untyped nil", d[0].Old)
	}
}

func TestComputePathsAreIndependent(t *testing.T) {
	d := Compute(obj(t, `{"s":{"a":1,"b":1,"c":1}}`), obj(t, `{"s":{"a":2,"b":2,"c":2}}`))
	if len(d) != 3 {
		t.Fatalf("got %v", d)
	}
	d[0].Path[1] = "mutated"
	if d[1].Path[1] != "b" || d[2].Path[1] != "c" {
		t.Errorf("items share path storage: %v", d)
	}
}

func TestReduce(t *testing.T) {
	tests := []struct {
		name string
		diff string
		path []string
		want string
	}{
		// (compat: handlers-field): relative to the field.
		{"label added, field on labels",
			`[["add",["metadata","labels","app"],null,"x"]]`, []string{"metadata", "labels"},
			`[["add",["app"],null,"x"]]`},
		{"manual example: labels",
			`[["add",["metadata","labels","label1"],null,"new-value"],` +
				`["change",["metadata","labels","label2"],"old-value","new-value"],` +
				`["remove",["metadata","labels","label3"],"old-value",null],` +
				`["change",["spec","size"],"1G","2G"]]`,
			[]string{"metadata", "labels"},
			`[["add",["label1"],null,"new-value"],["change",["label2"],"old-value","new-value"],["remove",["label3"],"old-value",null]]`},
		{"unrelated changes dropped",
			`[["change",["spec","other"],1,2],["change",["spec","fieldx"],1,2]]`, []string{"spec", "field"},
			`[]`},
		{"exact field: empty relative path",
			`[["change",["spec","field"],"x","y"]]`, []string{"spec", "field"},
			`[["change",[],"x","y"]]`},
		{"change below the field",
			`[["change",["spec","a","b","c"],1,2]]`, []string{"spec", "a"},
			`[["change",["b","c"],1,2]]`},
		// An ancestor added whole: re-diffed at the field.
		{"ancestor added",
			`[["add",["spec"],null,{"field":"x","other":1}]]`, []string{"spec", "field"},
			`[["add",[],null,"x"]]`},
		{"ancestor added without the field",
			`[["add",["spec"],null,{"other":1}]]`, []string{"spec", "field"},
			`[]`},
		{"creation's root add",
			`[["add",[],null,{"spec":{"field":{"a":1}}}]]`, []string{"spec", "field"},
			`[["add",[],null,{"a":1}]]`},
		{"ancestor removed",
			`[["remove",["spec"],{"field":"x"},null]]`, []string{"spec", "field"},
			`[["remove",[],"x",null]]`},
		{"ancestor changed from map: re-diffed by keys",
			`[["change",["spec"],{"a":{"b":1,"d":1}},"flat"]]`, []string{"spec", "a"},
			`[["remove",[],{"b":1,"d":1},null]]`},
		{"ancestor list replaced by a map",
			`[["change",["spec","a"],[1],{"b":1,"c":2}]]`, []string{"spec", "a", "b"},
			`[["add",[],null,1]]`},
		{"(compat: handlers-field-essence): status.phase watched",
			`[["change",["status","phase"],"Pending","Running"]]`, []string{"status", "phase"},
			`[["change",[],"Pending","Running"]]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Diff
			if err := json.Unmarshal([]byte(tt.diff), &d); err != nil {
				t.Fatal(err)
			}
			if got := diffJSON(t, d.Reduce(tt.path)); got != tt.want {
				t.Errorf("Reduce(%v):\n got %s\nwant %s", tt.path, got, tt.want)
			}
		})
	}
}

func TestReduceEmptyPathIsIdentity(t *testing.T) {
	d := Compute(obj(t, `{"a":1}`), obj(t, `{"a":2}`))
	if got := d.Reduce(nil); !reflect.DeepEqual(got, d) {
		t.Errorf("got %v, want %v", got, d)
	}
}

// Reducing a freshly computed diff gives what diffing the field's values
// gives, whatever the depth of the change: Kopf's reduce is exact.
func TestReduceMatchesFieldDiff(t *testing.T) {
	old := obj(t, `{"spec":{"a":{"b":{"c":1,"d":[1]},"e":1}},"metadata":{"labels":{"x":"1"}}}`)
	news := []string{
		`{"spec":{"a":{"b":{"c":2,"d":[1]},"e":1}},"metadata":{"labels":{"x":"1"}}}`,
		`{"spec":{"a":{"b":{"c":1,"d":[1,2]},"f":1}}}`,
		`{"spec":"flat"}`,
		`{}`,
		`{"spec":{"a":{"b":{"g":{"h":1}}}}}`,
	}
	paths := [][]string{{"spec"}, {"spec", "a"}, {"spec", "a", "b"}, {"spec", "a", "b", "c"}, {"spec", "a", "b", "g", "h"}, {"metadata", "labels"}}
	for _, n := range news {
		new := obj(t, n)
		for _, p := range paths {
			oldV, _ := getPath(old, p)
			newV, _ := getPath(new, p)
			want := diffJSON(t, Compute(oldV, newV))
			if got := diffJSON(t, Compute(old, new).Reduce(p)); got != want {
				t.Errorf("new=%s path=%v:\n got %s\nwant %s", n, p, got, want)
			}
		}
	}
}

func getPath(v any, path []string) (any, bool) {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func TestItemJSON(t *testing.T) {
	it := Item{Op: Add, Path: []string{"spec", "x"}, New: int64(1)}
	b, err := json.Marshal(it)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `["add",["spec","x"],null,1]`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got := diffJSON(t, nil); got != `[]` {
		t.Errorf("nil diff: got %s, want []", got)
	}

	var back Item
	if err := json.Unmarshal([]byte(`["change",["spec","n"],1,2.5]`), &back); err != nil {
		t.Fatal(err)
	}
	want := Item{Op: Change, Path: []string{"spec", "n"}, Old: int64(1), New: 2.5}
	if !reflect.DeepEqual(back, want) {
		t.Errorf("got %#v, want %#v", back, want)
	}

	var d Diff
	src := `[["add",[],null,{"spec":{"a":[1,"x",true,null]}}],["remove",["a"],"v",null]]`
	if err := json.Unmarshal([]byte(src), &d); err != nil {
		t.Fatal(err)
	}
	if got := diffJSON(t, d); got != src {
		t.Errorf("round trip:\n got %s\nwant %s", got, src)
	}

	for _, bad := range []string{`["add",[],null]`, `["move",[],null,1]`, `[1,[],null,1]`, `["add","x",null,1]`, `{}`} {
		var it Item
		if err := json.Unmarshal([]byte(bad), &it); err == nil {
			t.Errorf("%s: want an error", bad)
		}
	}
}
