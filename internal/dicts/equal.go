package dicts

import (
	"encoding/json"
	"math"
	"reflect"
)

// Equal reports whether two JSON-like values are the same, deeply. Numbers
// compare by value whatever their Go type, because the same object reaches
// kopfgo as int64 (client-go), float64 (encoding/json) or json.Number, and a
// difference of representation must never look like a change. A nil map or
// list equals nil.
func Equal(a, b any) bool {
	if Absent(a) || Absent(b) {
		return Absent(a) && Absent(b)
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !Equal(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	}
	if xn, ok := toNumber(a); ok {
		yn, ok := toNumber(b)
		return ok && xn.equal(yn)
	}
	return reflect.DeepEqual(a, b)
}

// number holds an integer exactly when it is one, so that large int64 values
// (resource versions in custom fields, byte sizes) compare without the
// rounding a float64 would bring.
type number struct {
	i     int64
	f     float64
	isInt bool
}

func (n number) equal(m number) bool {
	if n.isInt && m.isInt {
		return n.i == m.i
	}
	return n.float() == m.float()
}

func (n number) float() float64 {
	if n.isInt {
		return float64(n.i)
	}
	return n.f
}

func toNumber(v any) (number, bool) {
	switch t := v.(type) {
	case int:
		return number{i: int64(t), isInt: true}, true
	case int8:
		return number{i: int64(t), isInt: true}, true
	case int16:
		return number{i: int64(t), isInt: true}, true
	case int32:
		return number{i: int64(t), isInt: true}, true
	case int64:
		return number{i: t, isInt: true}, true
	case uint:
		return fromUint(uint64(t)), true
	case uint8:
		return number{i: int64(t), isInt: true}, true
	case uint16:
		return number{i: int64(t), isInt: true}, true
	case uint32:
		return number{i: int64(t), isInt: true}, true
	case uint64:
		return fromUint(t), true
	case float32:
		return fromFloat(float64(t)), true
	case float64:
		return fromFloat(t), true
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return number{i: i, isInt: true}, true
		}
		if f, err := t.Float64(); err == nil {
			return fromFloat(f), true
		}
	}
	return number{}, false
}

func fromUint(u uint64) number {
	if u <= math.MaxInt64 {
		return number{i: int64(u), isInt: true}
	}
	return number{f: float64(u)}
}

// fromFloat keeps integral floats as integers, so that 3.0 equals int64(3)
// exactly rather than through a lossy conversion of the integer.
func fromFloat(f float64) number {
	if f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
		return number{i: int64(f), isInt: true}
	}
	return number{f: f}
}

// Absent treats a nil map or list inside an interface as nil: an essence
// that was never stored arrives as a nil map[string]any, and must diff as
// Kopf's None does.
func Absent(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return t == nil
	case []any:
		return t == nil
	}
	return false
}
