package pyrepr

import "testing"

// The expectations are what CPython 3 prints for repr() of the same values.
func TestRepr(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{nil, "None"},
		{true, "True"},
		{false, "False"},
		{int64(5), "5"},
		{2.0, "2.0"},
		{1.5, "1.5"},
		{0.1, "0.1"},
		{1e-05, "1e-05"},
		{1e16, "1e+16"},
		{123456789.0, "123456789.0"},
		{"value", "'value'"},
		{"it's", `"it's"`},
		{`it's "x"`, `'it\'s "x"'`},
		{"a\\b\n\tc", `'a\\b\n\tc'`},
		{"\x01", `'\x01'`},
		{"ünï", "'ünï'"},
		{"\u200b", `'\u200b'`},
		{[]any{}, "[]"},
		{[]any{"item1", int64(2), nil}, "['item1', 2, None]"},
		{map[string]any{}, "{}"},
		{map[string]any{"spec": map[string]any{"field": "value", "b": true}, "apiVersion": "kopf.dev/v1"},
			"{'apiVersion': 'kopf.dev/v1', 'spec': {'b': True, 'field': 'value'}}"},
		{Tuple{}, "()"},
		{Tuple{"spec"}, "('spec',)"},
		{Tuple{Tuple{"change", Tuple{"spec", "field"}, "value", "changed"}},
			"(('change', ('spec', 'field'), 'value', 'changed'),)"},
	}
	for _, tt := range tests {
		if got := Repr(tt.v); got != tt.want {
			t.Errorf("Repr(%#v) = %s, want %s", tt.v, got, tt.want)
		}
	}
}

func TestFloat(t *testing.T) {
	for f, want := range map[float64]string{60: "60.0", 59.998123: "59.998123", 0.0001: "0.0001", 0.00001: "1e-05", -2.5: "-2.5", 0: "0.0"} {
		if got := Float(f); got != want {
			t.Errorf("Float(%v) = %s, want %s", f, got, want)
		}
	}
}
