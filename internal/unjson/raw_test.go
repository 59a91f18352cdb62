package unjson

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// DecodeRaw frames the values Decode decodes: the bytes decode to them.
func TestDecodeRawFramesWhatDecodeDecodes(t *testing.T) {
	stream := ` {"a":[1,{"b":"}\"]"}]} "x\\" 12 true null [] {"k":{"n":-1.5e3}}` + "\n"
	dec, raw := NewDecoder(strings.NewReader(stream)), NewDecoder(strings.NewReader(stream))
	for {
		want, werr := dec.Decode()
		b, err := raw.DecodeRaw()
		if werr == io.EOF || err == io.EOF {
			if werr != err {
				t.Fatalf("end: %v, want %v", err, werr)
			}
			return
		}
		if err != nil || werr != nil {
			t.Fatalf("errors %v, want %v", err, werr)
		}
		got, err := Unmarshal(b)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s decodes to %#v (%v), want %#v", b, got, err, want)
		}
	}
}

func TestDecodeRawReportsATruncatedValue(t *testing.T) {
	_, err := NewDecoder(strings.NewReader(`{"a":[1,`)).DecodeRaw()
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("error = %v, want an unexpected EOF", err)
	}
}

func TestDecodeStreamingRawHandsOutTheElements(t *testing.T) {
	in := `{"kind":"L","items":[{"a":1}, "s" ,[2]],"metadata":{"x":true}}`
	var got []string
	rest, err := NewDecoder(strings.NewReader(in)).DecodeStreamingRaw("items", func(b []byte) error {
		got = append(got, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`{"a":1}`, `"s"`, `[2]`}; !reflect.DeepEqual(got, want) {
		t.Errorf("elements = %q, want %q", got, want)
	}
	if want := map[string]any{"kind": "L", "metadata": map[string]any{"x": true}}; !reflect.DeepEqual(rest, want) {
		t.Errorf("rest = %v, want %v", rest, want)
	}
}

func TestMembersWalksAnObject(t *testing.T) {
	in := ` { "a" : "x\"}" , "b\u0063":{"d":[1,"]"]},"e":-1 } `
	type kv struct{ k, v string }
	var got []kv
	end, err := Members([]byte(in), func(m Member) error {
		if in[m.KeyStart] != '"' {
			t.Errorf("key %q starts at %q", m.Key, in[m.KeyStart])
		}
		got = append(got, kv{string(m.Key), in[m.ValueStart:m.ValueEnd]})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []kv{{"a", `"x\"}"`}, {"bc", `{"d":[1,"]"]}`}, {"e", "-1"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("members = %q, want %q", got, want)
	}
	if in[end-1] != '}' || strings.TrimSpace(in[end:]) != "" {
		t.Errorf("end = %d", end)
	}
}

func TestMembersRefusesBrokenObjects(t *testing.T) {
	for _, in := range []string{``, `[]`, `{"a"}`, `{"a":1 "b":2}`, `{a:1}`, `{"a":"x`, `{"a":[1}`, `{"a":1,}`, `{"a":1`} {
		if _, err := Members([]byte(in), func(Member) error { return nil }); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

func TestString(t *testing.T) {
	for in, want := range map[string]string{`"abc"`: "abc", `"\u00e9\n"`: "é\n", `"é"`: "é", `""`: ""} {
		if got, ok := String([]byte(in)); !ok || got != want {
			t.Errorf("String(%s) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{`null`, `1`, `"a`, `"\x"`} {
		if _, ok := String([]byte(in)); ok {
			t.Errorf("String(%s) is a string", in)
		}
	}
}
