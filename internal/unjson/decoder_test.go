package unjson

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"unsafe"
)

// readers deliver a stream in the ways a network might: all at once, a
// byte at a time, in halves, with io.EOF alongside the last bytes.
var readers = []struct {
	name string
	wrap func(io.Reader) io.Reader
}{
	{"whole", func(r io.Reader) io.Reader { return r }},
	{"one byte", iotest.OneByteReader},
	{"halves", iotest.HalfReader},
	{"EOF with data", iotest.DataErrReader},
	{"one byte, EOF with data", func(r io.Reader) io.Reader { return iotest.DataErrReader(iotest.OneByteReader(r)) }},
}

// decodeAll returns the values of a stream and the error that ended it.
func decodeAll(r io.Reader) ([]any, error) {
	d := NewDecoder(r)
	var vs []any
	for {
		v, err := d.Decode()
		if err != nil {
			return vs, err
		}
		vs = append(vs, v)
	}
}

func TestDecoder(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []any
	}{
		{"empty", ``, nil},
		{"only whitespace", " \n\t\r\n", nil},
		{"watch events", "{\"type\":\"ADDED\",\"object\":{\"a\":1}}\n{\"type\":\"DELETED\",\"object\":{\"a\":2}}\n",
			[]any{obj{"type": "ADDED", "object": obj{"a": int64(1)}}, obj{"type": "DELETED", "object": obj{"a": int64(2)}}}},
		{"no separators", `{}[]""{"a":[]}`, []any{obj{}, arr{}, "", obj{"a": arr{}}}},
		{"scalars", " 1 -2.5e1\ttrue\nfalse\r\nnull \"x\" ", []any{int64(1), -25.0, true, false, nil, "x"}},
		{"scalar before a bracket or quote", `1{}2[]3"x"`, []any{int64(1), obj{}, int64(2), arr{}, int64(3), "x"}},
		{"brackets in strings", `{"a":"}]{["}["\"]"]`, []any{obj{"a": "}]{["}, arr{`"]`}}},
		{"backslashes before quotes", `"\\" "\\\"" ["\\\\"]`, []any{`\`, `\"`, arr{`\\`}}},
		{"number at the end", `{} 12`, []any{obj{}, int64(12)}},
	}
	for _, c := range cases {
		for _, rd := range readers {
			t.Run(c.name+"/"+rd.name, func(t *testing.T) {
				got, err := decodeAll(rd.wrap(strings.NewReader(c.in)))
				if err != io.EOF {
					t.Fatalf("after %d values: %v, want io.EOF", len(got), err)
				}
				if !reflect.DeepEqual(got, c.want) {
					t.Errorf("values %#v, want %#v", got, c.want)
				}
			})
		}
	}
}

func TestDecoderTruncated(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []any // before the error
	}{
		{"object", `{"a":1} {"a":`, []any{obj{"a": int64(1)}}},
		{"inside a string", `{"a":"x`, nil},
		{"after a backslash", `"\`, nil},
		{"inside an escape", `["\u12`, nil},
		{"array", `[1,2`, nil},
		{"literal", `true tr`, []any{true}},
		{"minus", `-`, nil},
		{"point", `1.`, nil},
		{"exponent", `1e+`, nil},
		{"event", string(exampleStream(2)[:3000]), []any{mustUnmarshal(t, exampleStream(1))}},
	}
	for _, c := range cases {
		for _, rd := range readers {
			t.Run(c.name+"/"+rd.name, func(t *testing.T) {
				got, err := decodeAll(rd.wrap(strings.NewReader(c.in)))
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("after %d values: %v, want io.ErrUnexpectedEOF", len(got), err)
				}
				if !reflect.DeepEqual(got, c.want) {
					t.Errorf("values %#v, want %#v", got, c.want)
				}
			})
		}
	}
}

func mustUnmarshal(t *testing.T, data []byte) any {
	t.Helper()
	v, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDecoderErrors(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		want   []any // before the error
		offset int64
	}{
		{"malformed second value", "{\"a\":1}\n{\"a\":}", []any{obj{"a": int64(1)}}, 13},
		{"stray closing bracket", `{}]`, []any{obj{}}, 2},
		{"stray comma", `1 ,2`, []any{int64(1)}, 2},
		{"adjacent literals", `truefalse`, nil, 4},
		{"leading zero", `[] 01`, []any{arr{}}, 4},
		{"mismatched brackets", `[}`, nil, 1},
		{"mismatch inside", `{"a":[}`, nil, 6},
		{"control character", "\"a\x01\"", nil, 2},
		{"too deep", strings.Repeat("[", maxDepth+1), nil, maxDepth},
	}
	for _, c := range cases {
		for _, rd := range readers {
			t.Run(c.name+"/"+rd.name, func(t *testing.T) {
				d := NewDecoder(rd.wrap(strings.NewReader(c.in)))
				var got []any
				var err error
				for {
					var v any
					if v, err = d.Decode(); err != nil {
						break
					}
					got = append(got, v)
				}
				var se *SyntaxError
				if !errors.As(err, &se) || se.Offset != c.offset {
					t.Fatalf("after %d values: %v, want a syntax error at byte offset %d", len(got), err, c.offset)
				}
				if !reflect.DeepEqual(got, c.want) {
					t.Errorf("values %#v, want %#v", got, c.want)
				}
				if _, again := d.Decode(); again != err {
					t.Errorf("the next Decode returns %v, want the same error", again)
				}
			})
		}
	}
}

func TestDecoderReadError(t *testing.T) {
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader(`{"a":1} {"b"`), iotest.ErrReader(boom))
	got, err := decodeAll(r)
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want one wrapping %v", err, boom)
	}
	if want := []any{obj{"a": int64(1)}}; !reflect.DeepEqual(got, want) {
		t.Errorf("values %#v, want %#v", got, want)
	}
}

// A value larger than the buffer grows it; small values after it shrink it
// back, so the decoder does not keep the memory.
func TestDecoderLargeValue(t *testing.T) {
	big := `{"data":"` + strings.Repeat(`\"x`, 3*bufSize) + `","list":[` + strings.Repeat(`{"k":1},`, bufSize) + `{}]}`
	small := `{"small":true}`
	in := small + "\n" + big + "\n" + big + "\n" + small + "\n" + small + "\n"
	for _, rd := range readers {
		t.Run(rd.name, func(t *testing.T) {
			d := NewDecoder(rd.wrap(strings.NewReader(in)))
			for i, want := range []string{small, big, big, small, small} {
				v, err := d.Decode()
				if err != nil {
					t.Fatalf("value %d: %v", i, err)
				}
				if !reflect.DeepEqual(v, mustUnmarshal(t, []byte(want))) {
					t.Fatalf("value %d differs", i)
				}
			}
			if _, err := d.Decode(); err != io.EOF {
				t.Fatalf("at the end: %v, want io.EOF", err)
			}
			if len(d.buf) > bufSize {
				t.Errorf("the decoder keeps a %d-byte buffer after small values, want at most %d", len(d.buf), bufSize)
			}
		})
	}
}

func TestDecoderInternsKeys(t *testing.T) {
	d := NewDecoder(bytes.NewReader(exampleStream(2)))
	first, err1 := d.Decode()
	second, err2 := d.Decode()
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	assertSharedKeys(t, first.(obj)["object"], second.(obj)["object"])
}

func TestUnmarshalInternsKeys(t *testing.T) {
	list, err := Unmarshal(exampleList(2))
	if err != nil {
		t.Fatal(err)
	}
	items := list.(obj)["items"].(arr)
	assertSharedKeys(t, items[0], items[1])
}

// assertSharedKeys checks that the keys of two values with the same shape
// are the same strings in memory, not copies.
func assertSharedKeys(t *testing.T, a, b any) {
	t.Helper()
	checked := 0
	var walk func(a, b any, path string)
	walk = func(a, b any, path string) {
		switch a := a.(type) {
		case obj:
			b := b.(obj)
			keysOfB := map[string]string{}
			for k := range b {
				keysOfB[k] = k
			}
			for k, v := range a {
				kb, ok := keysOfB[k]
				if !ok {
					continue
				}
				if unsafe.StringData(k) != unsafe.StringData(kb) {
					t.Errorf("key %s.%s is allocated twice", path, k)
				}
				checked++
				walk(v, b[k], path+"."+k)
			}
		case arr:
			b := b.(arr)
			for i := range min(len(a), len(b)) {
				walk(a[i], b[i], path+"[]")
			}
		}
	}
	walk(a, b, "")
	if checked < 50 {
		t.Errorf("only %d keys compared", checked)
	}
}

// Hostile input (ever new keys) must not grow the intern table without
// bound; long keys are not kept at all.
func TestDecoderInternTableBounded(t *testing.T) {
	var in strings.Builder
	for i := range 3 * maxInternKeys {
		in.WriteString(`{"key-` + strconv.Itoa(i) + `":1,"` + strings.Repeat("k", maxInternLen+1+i%100) + "\":2}\n")
	}
	d := NewDecoder(strings.NewReader(in.String()))
	for {
		if _, err := d.Decode(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if n := len(d.p.keys.m); n > maxInternKeys {
			t.Fatalf("the intern table holds %d keys, more than %d", n, maxInternKeys)
		}
		for k := range d.p.keys.m {
			if len(k) > maxInternLen {
				t.Fatalf("the intern table holds a %d-byte key", len(k))
			}
		}
	}
}

// FuzzDecoder feeds the decoder a stream of values (the fuzzer's pieces
// that the reference accepts, split at NUL bytes), joined by varied
// whitespace, in varied chunks, and cut short at a varied place. It must
// return each value as the reference decodes it, then io.EOF, or
// io.ErrUnexpectedEOF where the cut falls inside a value.
func FuzzDecoder(f *testing.F) {
	f.Add([]byte("{\"a\":1}\x00[1,2]\x00\"x\"\x001\x002\x00true"), uint64(0), uint8(0), uint32(0))
	f.Add(exampleStream(3), uint64(0x123456), uint8(1), uint32(4000))
	f.Add([]byte("1\x00{}\x00\"\\\\\"\x00[\"\\\"\"]\x00null\x00-0.5e3"), uint64(0xfedcba), uint8(2), uint32(17))
	for i, s := range fuzzSeeds() {
		f.Add([]byte(s+"\x00"+s), uint64(i), uint8(i), uint32(i*7))
	}
	seps := []string{"", " ", "\n", "\r\n", "\t", " \n\t\r ", "\n\n", ""}
	f.Fuzz(func(t *testing.T, data []byte, sepBits uint64, reader uint8, cut uint32) {
		var pieces [][]byte
		var want []any
		for _, p := range bytes.Split(data, []byte{0}) {
			if v, err := reference(p); err == nil {
				pieces = append(pieces, p)
				want = append(want, v)
			}
		}
		// The stream, and where each value ends in it.
		var stream []byte
		var ends []int
		for i, p := range pieces {
			stream = append(stream, p...)
			ends = append(ends, len(stream))
			sep := seps[sepBits%uint64(len(seps))]
			sepBits = sepBits>>3 | sepBits<<61
			if i+1 < len(pieces) && sep == "" && !delimits[p[len(p)-1]] && !delimits[pieces[i+1][0]] {
				sep = " " // two numbers or literals need a space between them
			}
			stream = append(stream, sep...)
		}
		wrap := readers[int(reader)%len(readers)].wrap

		got, err := decodeAll(wrap(bytes.NewReader(stream)))
		if err != io.EOF {
			t.Fatalf("stream %q: after %d values: %v, want io.EOF", stream, len(got), err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("stream %q: values %#v, want %#v", stream, got, want)
		}

		// Cut the stream: the values before the cut come out, then the
		// prefix of the value it cuts (if that is a value itself), then
		// io.EOF, or io.ErrUnexpectedEOF if the cut leaves an incomplete
		// value.
		at := int(cut % uint32(len(stream)+1))
		short := stream[:at]
		k := 0
		for k < len(ends) && ends[k] <= at {
			k++
		}
		var wantShort []any
		wantShort = append(wantShort, want[:k]...)
		wantErr := io.EOF
		if k < len(pieces) {
			begin := ends[k] - len(pieces[k])
			if at > begin {
				part := bytes.TrimLeft(stream[begin:at], " \t\r\n")
				if v, err := reference(part); err == nil {
					wantShort = append(wantShort, v)
				} else if len(part) > 0 {
					wantErr = io.ErrUnexpectedEOF
				}
			}
		}
		got, err = decodeAll(wrap(bytes.NewReader(short)))
		if !errors.Is(err, wantErr) {
			t.Fatalf("stream %q: after %d values: %v, want %v", short, len(got), err, wantErr)
		}
		if !reflect.DeepEqual(got, wantShort) {
			t.Fatalf("stream %q: values %#v, want %#v", short, got, wantShort)
		}
	})
}
