package unjson

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	kjson "sigs.k8s.io/json"
)

// reference is what Kubernetes clients decode today, and what Unmarshal
// must equal.
func reference(data []byte) (any, error) {
	var v any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &v); err != nil {
		return nil, err
	}
	return v, nil
}

type obj = map[string]any
type arr = []any

func TestUnmarshal(t *testing.T) {
	nested := func(open, close string, n int) string {
		return strings.Repeat(open, n) + strings.Repeat(close, n)
	}
	cases := []struct {
		name string
		in   string
		want any
	}{
		{"empty object", `{}`, obj{}},
		{"empty array is not nil", `[]`, arr{}},
		{"empty string", `""`, ""},
		{"null", `null`, nil},
		{"true", `true`, true},
		{"false", `false`, false},
		{"object", `{"a":1,"b":[true,null,"x"],"c":{"d":{}}}`,
			obj{"a": int64(1), "b": arr{true, nil, "x"}, "c": obj{"d": obj{}}}},
		{"whitespace around and between", " \t\r\n{ \"a\" :\n[ 1 ,\t2 ] } \n", obj{"a": arr{int64(1), int64(2)}}},
		{"the last of repeated keys wins", `{"a":1,"b":2,"a":3}`, obj{"a": int64(3), "b": int64(2)}},
		{"repeated keys in nested objects", `[{"k":1},{"k":2,"k":{"k":3}}]`, arr{obj{"k": int64(1)}, obj{"k": obj{"k": int64(3)}}}},

		{"zero", `0`, int64(0)},
		{"minus zero is an integer", `-0`, int64(0)},
		{"integer", `-123`, int64(-123)},
		{"18 digits", `123456789012345678`, int64(123456789012345678)},
		{"19 digits", `1234567890123456789`, int64(1234567890123456789)},
		{"max int64", `9223372036854775807`, int64(math.MaxInt64)},
		{"min int64", `-9223372036854775808`, int64(math.MinInt64)},
		{"above int64 is a float", `9223372036854775808`, float64(9223372036854775808)},
		{"below int64 is a float", `-9223372036854775809`, float64(-9223372036854775809)},
		{"20 digits", `12345678901234567890`, float64(12345678901234567890)},
		{"huge integer", `1` + strings.Repeat("0", 300), 1e300},
		{"fraction", `1.5`, 1.5},
		{"fraction of zero is a float", `1.0`, float64(1)},
		{"exponent is a float", `1e2`, float64(100)},
		{"capital exponent with sign", `-2E+2`, float64(-200)},
		{"negative exponent", `25e-1`, 2.5},
		{"max float64", `1.7976931348623157e308`, math.MaxFloat64},
		{"underflow is zero", `1e-400`, float64(0)},

		{"escapes", `"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t"},
		{"unicode escape", `"caf\u00e9 \u00E9"`, "café é"},
		{"NUL escape", `"\u0000"`, "\x00"},
		{"surrogate pair", `"\ud83d\ude00"`, "😀"},
		{"lone high surrogate", `"\ud83dx"`, "\uFFFDx"},
		{"lone high surrogate at end", `"\ud83d"`, "\uFFFD"},
		{"lone low surrogate", `"\ude00"`, "\uFFFD"},
		{"high surrogate then not low", `"\ud83d\u0041"`, "\uFFFDA"},
		{"two highs then low", `"\ud83d\ud83d\ude00"`, "\uFFFD😀"},
		{"reversed pair", `"\ude00\ud83d"`, "\uFFFD\uFFFD"},
		{"UTF-8 as is", "\"ü€😀\"", "ü€😀"},
		{"invalid UTF-8 byte", "\"a\xffb\"", "a\uFFFDb"},
		{"truncated UTF-8 sequence", "\"a\xe2\x82\"", "a\uFFFD\uFFFD"},
		{"UTF-8 encoded surrogate", "\"\xed\xa0\x80\"", "\uFFFD\uFFFD\uFFFD"},
		{"overlong UTF-8", "\"\xc0\xaf\"", "\uFFFD\uFFFD"},
		{"invalid UTF-8 with escapes", "\"\\n\xff\"", "\n\uFFFD"},
		{"DEL is allowed", "\"\x7f\"", "\x7f"},
		{"invalid UTF-8 in a key", "{\"\xff\":1}", obj{"\uFFFD": int64(1)}},
		{"escaped key", `{"a\nb":1}`, obj{"a\nb": int64(1)}},

		{"deepest arrays", nested("[", "]", maxDepth), nil}, // checked against the reference only
		{"deepest mixed", nested(`{"a":[`, "]}", maxDepth/2), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Unmarshal([]byte(c.in))
			if err != nil {
				t.Fatalf("Unmarshal(%q): %v", c.in, err)
			}
			ref, err := reference([]byte(c.in))
			if err != nil {
				t.Fatalf("reference fails on %q: %v", c.in, err)
			}
			if !reflect.DeepEqual(got, ref) {
				t.Errorf("Unmarshal(%q) = %#v, the reference gives %#v", c.in, got, ref)
			}
			if c.want != nil && !reflect.DeepEqual(got, c.want) {
				t.Errorf("Unmarshal(%q) = %#v, want %#v", c.in, got, c.want)
			}
		})
	}
}

func TestUnmarshalMinusZeroFloat(t *testing.T) {
	got, err := Unmarshal([]byte(`-0.0`))
	if f, ok := got.(float64); err != nil || !ok || f != 0 || !math.Signbit(f) {
		t.Errorf("Unmarshal(-0.0) = %#v, %v; want negative zero", got, err)
	}
}

func TestUnmarshalErrors(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		offset int64
	}{
		{"empty", ``, 0},
		{"only whitespace", " \n\t ", 4},
		{"form feed is not whitespace", "\f{}", 0},
		{"no-break space is not whitespace", "\u00a0{}", 0},
		{"byte order mark", "\ufeff{}", 0},
		{"trailing data", `{}x`, 2},
		{"two values", `{} {}`, 3},
		{"two numbers", `1 2`, 2},
		{"leading zero", `01`, 1},
		{"plus sign", `+1`, 0},
		{"lone minus", `-`, 1},
		{"minus minus", `--1`, 1},
		{"no digit after point", `1.`, 2},
		{"no digit after point in array", `[1.]`, 3},
		{"no digit before point", `.5`, 0},
		{"no exponent digits", `1e`, 2},
		{"no exponent digits after sign", `1e+`, 3},
		{"hex", `0x1`, 1},
		{"float beyond float64", `1e400`, 0},
		{"negative float beyond float64", `[-1.8e308]`, 1},
		{"integer beyond float64", `[1` + strings.Repeat("0", 400) + `]`, 1},
		{"bare word", `nul`, 3},
		{"misspelt literal", `tru3`, 3},
		{"literal with a tail", `truex`, 4},
		{"capitalised literal", `True`, 0},
		{"unclosed array", `[1,2`, 4},
		{"trailing comma in array", `[1,]`, 3},
		{"missing comma", `[1 2]`, 3},
		{"unclosed object", `{"a":1`, 6},
		{"trailing comma in object", `{"a":1,}`, 7},
		{"missing colon", `{"a" 1}`, 5},
		{"missing value", `{"a":}`, 5},
		{"key not a string", `{1:2}`, 1},
		{"single quotes", `{'a':1}`, 1},
		{"mismatched brackets", `[}`, 1},
		{"unclosed string", `"abc`, 4},
		{"control character in string", "\"a\x01\"", 2},
		{"newline in string", "\"a\nb\"", 2},
		{"unknown escape", `"\x"`, 2},
		{"escaped single quote", `"\'"`, 2},
		{"short unicode escape", `"\u12"`, 5},
		{"bad hex in unicode escape", `"\u12G4"`, 5},
		{"backslash at end", `"\`, 2},
		{"too deep", strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1), maxDepth},
		{"too deep, unclosed", strings.Repeat(`{"a":`, maxDepth+1), 5 * maxDepth},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Unmarshal([]byte(c.in))
			if err == nil {
				t.Fatalf("Unmarshal(%q) = %#v, want an error", c.in, got)
			}
			if _, refErr := reference([]byte(c.in)); refErr == nil {
				t.Errorf("the reference accepts %q", c.in)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Unmarshal(%q): %v is not a *SyntaxError", c.in, err)
			}
			if se.Offset != c.offset {
				t.Errorf("Unmarshal(%q): %v; want offset %d", c.in, err, c.offset)
			}
			if !strings.Contains(err.Error(), "byte offset") {
				t.Errorf("error %q does not say where", err)
			}
		})
	}
}

// FuzzUnmarshal checks Unmarshal against the reference on any input: the
// same value, or an error from both.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Unmarshal(data)
		want, refErr := reference(data)
		if (err != nil) != (refErr != nil) {
			t.Fatalf("Unmarshal(%q): error %v, the reference's %v", data, err, refErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Unmarshal(%q) = %#v, the reference gives %#v", data, got, want)
		}
		var se *SyntaxError
		if err != nil && (!errors.As(err, &se) || se.Offset < 0 || se.Offset > int64(len(data))) {
			t.Fatalf("Unmarshal(%q): %v does not say where in the input", data, err)
		}
	})
}

func fuzzSeeds() []string {
	return []string{
		``, ` `, `{}`, `[]`, `""`, `null`, `true`, `false`, `0`, `-0`, `-0.0`, `1e2`, `1E-2`, `0.5e+3`,
		`9223372036854775807`, `9223372036854775808`, `-9223372036854775808`, `-9223372036854775809`,
		`123456789012345678`, `1e400`, `1e-400`, `01`, `1.`, `-`, `.1`,
		`"\ud83d\ude00"`, `"\ud83d"`, `"\ude00\ud83d"`, `"\ud83d\u0041"`, `"\u00e9\n\t\"\\\/\b\f\r"`,
		"\"\xff\xed\xa0\x80\xc0\xaf\xe2\x82\"", "\"ü€😀\"", "\"a\x01\"", `"\'"`,
		`{"a":1,"a":2}`, `{"a":{"b":[1,2.5,"c",null,true,false,{}]}}`, ` [ 1 , 2 ] `, `[1,]`, `{"a":1,}`,
		`{"a" : 1 , "b" : [ ] }`, `{}x`, `{} {}`, `[[[[[[]]]]]]`, `[}`, `{"a":[}`, "\f{}",
		string(exampleObject()),
	}
}
