package unjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

// streamed decodes one object from r with DecodeStreaming, as a list
// response is read: the stream must end after it. It returns the elements
// handed out under key, even when it then fails.
func streamed(r io.Reader, key string) (elems []any, rest map[string]any, err error) {
	d := NewDecoder(r)
	rest, err = d.DecodeStreaming(key, func(v any) error {
		elems = append(elems, v)
		return nil
	})
	if err != nil {
		return elems, nil, err
	}
	// What follows is the Decoder's business (a stream's next value), not
	// the object's: its errors are not the object's syntax errors.
	if _, err := d.Decode(); err != io.EOF {
		return elems, nil, fmt.Errorf("something follows the object: %v", err)
	}
	return elems, rest, nil
}

func TestDecodeStreaming(t *testing.T) {
	cases := []struct {
		name  string
		in    string
		elems []any
		rest  obj
	}{
		{"items last", `{"kind":"L","metadata":{"rv":"5"},"items":[{"a":1},2,"x",null,[],{}]}`,
			[]any{obj{"a": int64(1)}, int64(2), "x", nil, arr{}, obj{}}, obj{"kind": "L", "metadata": obj{"rv": "5"}}},
		{"items first", `{"items":[1,[2,[3]]],"kind":"L"}`, []any{int64(1), arr{int64(2), arr{int64(3)}}}, obj{"kind": "L"}},
		{"items between", `{"a":1,"items":["}]"],"b":2}`, []any{"}]"}, obj{"a": int64(1), "b": int64(2)}},
		{"absent", `{"kind":"L"}`, nil, obj{"kind": "L"}},
		{"null", `{"items":null,"kind":"L"}`, nil, obj{"kind": "L"}},
		{"empty", `{"items":[]}`, nil, obj{}},
		{"empty object", `{}`, nil, obj{}},
		{"whitespace everywhere", " \n{ \"items\" :\t[ 1 ,\r\n2 ] , \"k\" : [ ] }\n", []any{int64(1), int64(2)}, obj{"k": arr{}}},
		{"whitespace in empties", "{ \"items\" : [ \n ] }", nil, obj{}},
		{"escaped key", `{"it\u0065ms":[1]}`, []any{int64(1)}, obj{}},
		{"only the top level's key", `{"a":{"items":[1]},"items":[{"items":[2]}]}`, []any{obj{"items": arr{int64(2)}}}, obj{"a": obj{"items": arr{int64(1)}}}},
		{"other keys repeated: the last wins", `{"k":1,"items":[],"k":2}`, nil, obj{"k": int64(2)}},
		{"scalars as elements", `{"items":[true,false,null,-1.5e1,0]}`, []any{true, false, nil, -15.0, int64(0)}, obj{}},
	}
	for _, c := range cases {
		for _, rd := range readers {
			t.Run(c.name+"/"+rd.name, func(t *testing.T) {
				elems, rest, err := streamed(rd.wrap(strings.NewReader(c.in)), "items")
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(elems, c.elems) || !reflect.DeepEqual(rest, c.rest) {
					t.Errorf("elements %#v, rest %#v\nwant     %#v, rest %#v", elems, rest, c.elems, c.rest)
				}
				// The same as Unmarshal's, but for the array kept apart.
				whole := mustUnmarshal(t, []byte(c.in)).(obj)
				if items, _ := whole["items"].(arr); len(items) != len(elems) || len(items) > 0 && !reflect.DeepEqual(items, arr(elems)) {
					t.Errorf("elements %#v, Unmarshal's %#v", elems, items)
				}
				delete(whole, "items")
				if !reflect.DeepEqual(rest, whole) {
					t.Errorf("rest %#v, Unmarshal's %#v", rest, whole)
				}
			})
		}
	}
}

// Malformed input gives the SyntaxError that Unmarshal gives, at the same
// offset; input cut short gives io.ErrUnexpectedEOF.
func TestDecodeStreamingSyntaxErrors(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	cases := []struct {
		name string
		in   string
	}{
		{"trailing comma in items", `{"items":[1,]}`},
		{"missing comma in items", `{"items":[1 2]}`},
		{"element junk", `{"items":[1x]}`},
		{"stray bracket after items", `{"items":[1]]}`},
		{"trailing comma in object", `{"a":1,}`},
		{"missing colon", `{"a" 1}`},
		{"comma first", `{,}`},
		{"key not a string", `{1:2}`},
		{"bad null", `{"items":nul}`},
		{"bad literal member", `{"a":tru}`},
		{"bad escape in key", `{"\x":1}`},
		{"control character in key", "{\"a\x01\":1}"},
		{"mismatched brackets in a member", `{"a":[}`},
		{"mismatched brackets in an element", `{"items":[{]}`},
		{"element nested too deep", `{"items":[` + deep(maxDepth-1) + `]}`},
		{"member nested too deep", `{"a":` + deep(maxDepth) + `}`},
	}
	for _, c := range cases {
		_, ref := Unmarshal([]byte(c.in))
		var want *SyntaxError
		if !errors.As(ref, &want) {
			t.Fatalf("%s: Unmarshal gives %v, not a syntax error", c.name, ref)
		}
		for _, rd := range readers {
			t.Run(c.name+"/"+rd.name, func(t *testing.T) {
				_, _, err := streamed(rd.wrap(strings.NewReader(c.in)), "items")
				var se *SyntaxError
				if !errors.As(err, &se) || se.Offset != want.Offset {
					t.Errorf("error %v, want a syntax error at byte offset %d like %v", err, want.Offset, want)
				}
			})
		}
	}
}

func TestDecodeStreamingDepthLimit(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, in := range []string{
		`{"items":[` + deep(maxDepth-2) + `]}`,
		`{"a":` + deep(maxDepth-1) + `}`,
	} {
		mustUnmarshal(t, []byte(in)) // as deep as allowed
		if _, _, err := streamed(strings.NewReader(in), "items"); err != nil {
			t.Errorf("%.20s…: %v", in, err)
		}
	}
}

func TestDecodeStreamingTruncated(t *testing.T) {
	for _, in := range []string{`{`, `{"it`, `{"items"`, `{"items":`, `{"items":[`, `{"items":[1`, `{"items":[1,`,
		`{"items":[{"a":`, `{"items":[1]`, `{"items":[1],`, `{"a":1`, `{"a":"x`, `{"a":tr`, `{"items":nu`, `{"a":1 `} {
		for _, rd := range readers {
			t.Run(in+"/"+rd.name, func(t *testing.T) {
				_, _, err := streamed(rd.wrap(strings.NewReader(in)), "items")
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("error %v, want io.ErrUnexpectedEOF", err)
				}
			})
		}
	}
}

// What Unmarshal accepts but a streamed object cannot be.
func TestDecodeStreamingRefusals(t *testing.T) {
	for _, in := range []string{`[1]`, `"x"`, `1`, `null`, `{"items":{}}`, `{"items":"x"}`, `{"items":1}`, `{"items":true}`,
		`{"items":[],"items":[]}`, `{"items":null,"items":[1]}`} {
		t.Run(in, func(t *testing.T) {
			mustUnmarshal(t, []byte(in))
			_, _, err := streamed(strings.NewReader(in), "items")
			var se *SyntaxError
			if err == nil || errors.As(err, &se) {
				t.Errorf("error %v, want a refusal", err)
			}
		})
	}
}

func TestDecodeStreamingEOF(t *testing.T) {
	for _, in := range []string{``, " \n\t"} {
		d := NewDecoder(strings.NewReader(in))
		if _, err := d.DecodeStreaming("items", func(any) error { return nil }); err != io.EOF {
			t.Errorf("%q: %v, want io.EOF", in, err)
		}
	}
}

func TestDecodeStreamingStopsAtTheCallersError(t *testing.T) {
	stop := errors.New("stop")
	d := NewDecoder(strings.NewReader(`{"items":[1,2,3]} {}`))
	var got []any
	_, err := d.DecodeStreaming("items", func(v any) error {
		got = append(got, v)
		if len(got) == 2 {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Fatalf("error %v, want %v", err, stop)
	}
	if want := []any{int64(1), int64(2)}; !reflect.DeepEqual(got, want) {
		t.Errorf("elements %#v, want %#v", got, want)
	}
	if _, again := d.Decode(); again != stop {
		t.Errorf("the next Decode returns %v, want the same error", again)
	}
}

// A stream of values then objects streamed: each starts where the last
// ended.
func TestDecodeStreamingInAStream(t *testing.T) {
	d := NewDecoder(strings.NewReader(`1 {"items":[2]}{"items":[3],"a":4} "x"`))
	var got []any
	add := func(v any) error { got = append(got, v); return nil }
	first, err := d.Decode()
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, first)
	if _, err := d.DecodeStreaming("items", add); err != nil {
		t.Fatal(err)
	}
	rest, err := d.DecodeStreaming("items", add)
	if err != nil {
		t.Fatal(err)
	}
	last, err := d.Decode()
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, rest, last)
	if want := []any{int64(1), int64(2), int64(3), obj{"a": int64(4)}, "x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("values %#v, want %#v", got, want)
	}
}

// The point of streaming: a list far larger than the buffer is read
// through a buffer of the usual size.
func TestDecodeStreamingKeepsTheBufferSmall(t *testing.T) {
	list := exampleList(10 * bufSize / len(exampleObject()))
	for _, rd := range readers {
		t.Run(rd.name, func(t *testing.T) {
			d := NewDecoder(rd.wrap(bytes.NewReader(list)))
			n := 0
			rest, err := d.DecodeStreaming("items", func(v any) error {
				if !reflect.DeepEqual(v, mustUnmarshal(t, exampleN(n))) {
					t.Fatalf("element %d differs", n)
				}
				n++
				if len(d.buf) > bufSize {
					t.Fatalf("after %d elements the buffer has grown to %d bytes", n, len(d.buf))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if rest["kind"] != "KopfExampleList" {
				t.Errorf("rest %v", rest)
			}
		})
	}
}

func TestDecodeStreamingInternsKeys(t *testing.T) {
	var elems []any
	d := NewDecoder(bytes.NewReader(exampleList(2)))
	if _, err := d.DecodeStreaming("items", func(v any) error { elems = append(elems, v); return nil }); err != nil {
		t.Fatal(err)
	}
	assertSharedKeys(t, elems[0], elems[1])
}

// topLevelKeys counts the members named key of the object in data, which
// Unmarshal accepts. encoding/json's tokens are the oracle.
func topLevelKeys(t *testing.T, data []byte, key string) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %v %v", tok, err)
	}
	n := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		if tok == key {
			n++
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// FuzzDecodeStreaming checks DecodeStreaming against Unmarshal of the
// whole input, read in varied chunks: the elements and the other members
// are Unmarshal's; it fails exactly where Unmarshal does (at the same
// offset for syntax errors), or where the input is not an object with an
// array or null under the key once. Then it cuts the input short: the
// elements handed out before the io.ErrUnexpectedEOF are the first ones.
func FuzzDecodeStreaming(f *testing.F) {
	for i, s := range fuzzSeeds() {
		f.Add([]byte(s), uint8(i), uint32(i*7))
	}
	for i, s := range []string{`{"items":[1,2,{"a":[]}],"kind":"L"}`, `{"kind":"L","items":null}`, `{"items":[]}`,
		`{"items":"x"}`, `{"items":[],"items":[1]}`, `{"a":1,"":[1],"a":{}}`, ` { "items" : [ [ ] , { } ] } `, string(exampleList(3))} {
		f.Add([]byte(s), uint8(i), uint32(i*37))
	}
	keys := []string{"items", "a", ""}
	f.Fuzz(func(t *testing.T, data []byte, choice uint8, cut uint32) {
		key := keys[int(choice)%len(keys)]
		wrap := readers[int(choice/4)%len(readers)].wrap
		elems, rest, err := streamed(wrap(bytes.NewReader(data)), key)

		v, refErr := Unmarshal(data)
		if refErr != nil {
			if err == nil {
				t.Fatalf("%q: no error, Unmarshal's is %v", data, refErr)
			}
			var want, got *SyntaxError
			if errors.As(refErr, &want) && errors.As(err, &got) && got.Offset != want.Offset {
				t.Fatalf("%q: %v, Unmarshal's is %v", data, err, refErr)
			}
			return
		}
		m, isObject := v.(obj)
		refuse := !isObject
		if isObject {
			switch m[key].(type) {
			case nil, arr:
				refuse = topLevelKeys(t, data, key) > 1
			default:
				refuse = true
			}
		}
		if refuse {
			if err == nil {
				t.Fatalf("%q: no error, want a refusal", data)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		items, _ := m[key].(arr)
		delete(m, key)
		if len(elems) != len(items) || len(items) > 0 && !reflect.DeepEqual(arr(elems), items) {
			t.Fatalf("%q: elements %#v, want %#v", data, elems, items)
		}
		if !reflect.DeepEqual(rest, m) {
			t.Fatalf("%q: rest %#v, want %#v", data, rest, m)
		}

		end := len(bytes.TrimRight(data, " \t\r\n"))
		at := int(cut % uint32(end))
		short := data[:at]
		got, _, err := streamed(wrap(bytes.NewReader(short)), key)
		if len(bytes.TrimLeft(short, " \t\r\n")) == 0 {
			if err != io.EOF {
				t.Fatalf("%q: %v, want io.EOF", short, err)
			}
			return
		}
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("%q: %v, want io.ErrUnexpectedEOF", short, err)
		}
		if len(got) > len(elems) || len(got) > 0 && !reflect.DeepEqual(got, elems[:len(got)]) {
			t.Fatalf("%q: elements %#v, want the first of %#v", short, got, elems)
		}
	})
}
