package dicts

import (
	"encoding/json"
	"testing"
)

func TestEqual(t *testing.T) {
	tests := []struct {
		a, b any
		want bool
	}{
		{nil, nil, true},
		{nil, map[string]any(nil), true},
		{map[string]any{}, nil, false},
		{[]any(nil), nil, true},
		{[]any{}, nil, false},
		{int64(1), 1.0, true},
		{int64(1), 1.5, false},
		{json.Number("10"), uint8(10), true},
		{uint64(1 << 63), float64(1 << 63), true},
		{"1", int64(1), false},
		{true, int64(1), false},
		{map[string]any{"a": nil}, map[string]any{}, false},
		{[]any{int64(1), "a"}, []any{1.0, "a"}, true},
		{[]any{int64(1)}, []any{int64(1), int64(2)}, false},
		{map[string]any{"a": []any{map[string]any{"b": 1}}}, map[string]any{"a": []any{map[string]any{"b": int64(1)}}}, true},
		{[]string{"x"}, []string{"x"}, true}, // non-JSON shapes fall back to reflect
	}
	for _, tt := range tests {
		if got := Equal(tt.a, tt.b); got != tt.want {
			t.Errorf("Equal(%#v, %#v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := Equal(tt.b, tt.a); got != tt.want {
			t.Errorf("Equal(%#v, %#v) = %v, want %v (swapped)", tt.b, tt.a, got, tt.want)
		}
	}
}
