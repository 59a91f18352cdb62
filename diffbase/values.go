package diffbase

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"

	"github.com/kopfgo/kopfgo/internal/unjson"
)

// Equal reports whether two JSON-like values are the same, deeply. Numbers
// compare by value whatever their Go type, because the same object reaches
// kopfgo as int64 (client-go), float64 (encoding/json) or json.Number, and a
// difference of representation must never look like a change. A nil map or
// list equals nil.
func Equal(a, b any) bool {
	if isAbsent(a) || isAbsent(b) {
		return isAbsent(a) && isAbsent(b)
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

// decodeValue parses JSON into the shapes client-go gives bodies: int64 for
// integers, float64 for other numbers, so that stored and live essences carry
// the same Go types into handlers.
func decodeValue(data []byte) (any, error) {
	return unjson.Unmarshal(data)
}

// encodeValue writes compact JSON without HTML escaping, as Python's
// json.dumps(..., separators=(',', ':')) does, followed by "\n". Maps'
// keys are sorted, as encoding/json sorts them.
//
// It is encoding/json's output, byte for byte: the values of decoded JSON
// (maps, lists, plain strings, integers, booleans, null) are written here,
// since every pass stores an essence and encoding/json's reflection was a
// large share of a pass over an object with nothing to do; anything else
// (floats, strings that need escaping, other types) is written by
// encoding/json.
func encodeValue(v any) ([]byte, error) {
	b, err := appendValue(make([]byte, 0, 256), v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func appendValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case string:
		return appendString(b, x)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendValue(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		if x == nil {
			return append(b, "null"...), nil
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendString(b, k); err != nil {
				return nil, err
			}
			b = append(b, ':')
			if b, err = appendValue(b, x[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	return appendJSON(b, v)
}

// appendString writes a string that needs no escaping as it is, and
// leaves any other to encoding/json.
func appendString(b []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return appendJSON(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}

// appendJSON writes v as encoding/json does, without HTML escaping.
func appendJSON(b []byte, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}
