package diffbase

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/internal/unjson"
	"github.com/kopfgo/kopfgo/patch"
)

// The diff-base comes back from the API server as whatever anyone wrote into
// the annotation, and the essence is built from whatever the object holds:
// these targets require that neither panics, that a stored value that is not
// an essence is reported as ErrCorrupt, and that an essence survives being
// stored and read back.

func FuzzAnnotationsFetch(f *testing.F) {
	for _, s := range []string{
		"", "null", "null\n", "{}", "{}\n", `{"spec":{"field":"value"}}` + "\n", `{"spec":`, `[]`, `"spec"`, `1`,
		`{"spec":"a string"}`, `{"metadata":{"labels":null}}`, `{"spec":{"a":1e400}}`, ` {"spec":{}} `,
		"{\"spec\":\"\xff\"}", `{"spec":{"a":{"b":{"c":{"d":{"e":[[[[[]]]]]}}}}}}`, `{"a":1}{"b":2}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		s := NewAnnotationsStorage()
		key := s.keys(nil)[0]
		body := map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}}
		essence, err := s.Fetch(body)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if essence == nil {
			return
		}
		checkStored(t, s, body, essence)
	})
}

func FuzzEssence(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"spec":"a string"}`, `{"metadata":{"labels":null,"annotations":null}}`,
		`{"metadata":{"labels":"x","annotations":["a"]},"spec":{"x":[1,2]}}`, `{"metadata":"m","status":{"a":1}}`,
		`{"apiVersion":"v1","kind":"K","metadata":{"annotations":{"kopf.zalando.org/last-handled-configuration":"{}"}},"spec":{}}`,
		`{"spec":{"a":{"b":{"c":{}}}},"data":{"k":"v"}}`, `{"spec":{"f":1.5,"i":9007199254740993}}`,
	} {
		f.Add([]byte(s), "spec.field")
	}
	f.Fuzz(func(t *testing.T, data []byte, field string) {
		v, err := unjson.Unmarshal(data)
		body, ok := v.(map[string]any)
		if err != nil || !ok {
			return // objects arrive as JSON objects
		}
		var extra [][]string
		if path, err := dicts.ParsePath(field); err == nil {
			extra = append(extra, path)
		}
		s := NewAnnotationsStorage()
		essence := s.Build(body, extra)
		if d := Compute(essence, essence); len(d) != 0 {
			t.Fatalf("an essence differs from itself: %v", d)
		}
		checkStored(t, s, body, essence)
		d := Compute(nil, essence)
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("diff %v does not marshal: %v", d, err)
		}
		var back []Item
		if err := json.Unmarshal(b, &back); err != nil || len(back) != len(d) {
			t.Fatalf("diff %s does not read back: %v", b, err)
		}
	})
}

func FuzzDiffItem(f *testing.F) {
	for _, s := range []string{
		`["add",["spec","x"],null,1]`, `["change",[],{"a":1},{"a":2}]`, `["remove",["a"],"x",null]`,
		`["nope",[],1,2]`, `["add",[1],1,2]`, `["add",[]]`, `[]`, `{}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var it Item
		if err := json.Unmarshal(data, &it); err != nil {
			return
		}
		b, err := json.Marshal(it)
		if err != nil {
			t.Fatalf("%+v read from %s does not marshal: %v", it, data, err)
		}
		var again Item
		if err := json.Unmarshal(b, &again); err != nil || again.Op != it.Op || !dicts.Equal(again.Old, it.Old) || !dicts.Equal(again.New, it.New) {
			t.Fatalf("%s → %+v → %s → %+v, %v", data, it, b, again, err)
		}
	})
}

// checkStored stores the essence on the body and reads it back.
func checkStored(t *testing.T, s *AnnotationsStorage, body, essence map[string]any) {
	t.Helper()
	var p patch.Patch
	s.Store(body, &p, essence)
	again, err := s.Fetch(p.Apply(body))
	if err != nil || !dicts.Equal(again, essence) {
		t.Fatalf("stored %v, read back %v, %v", essence, again, err)
	}
}

// encodeValue writes decoded JSON values itself, for speed: byte for byte
// what encoding/json writes without HTML escaping.
func FuzzEncodeValue(f *testing.F) {
	for _, s := range []string{
		`{"spec":{"field":"value","items":["item1","item2"],"n":1,"f":1.5,"big":1e21,"small":1e-7,"neg":-3,"t":true,"z":null}}`,
		`{"b":1,"a":{"d":[],"c":{}},"":"","é":"ü","esc":"a\"b\\c\n\t\u0001<>&\u2028\u2029"}`,
		`["\u007f", "x\ud800y", 12345678901234567890, -0, 0.1, 100000000000000000000]`,
		`null`, `"plain"`, `[[[]]]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		v, err := unjson.Unmarshal([]byte(data))
		if err != nil {
			return
		}
		want, wantErr := appendJSON(nil, v)
		got, err := encodeValue(v)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("encodeValue(%s): error %v, encoding/json's %v", data, err, wantErr)
		}
		if err == nil && string(got) != string(want)+"\n" {
			t.Fatalf("encodeValue(%s) = %q, encoding/json writes %q", data, got, want)
		}
	})
}
