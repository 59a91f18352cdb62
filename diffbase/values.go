package diffbase

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/kopfgo/kopfgo/internal/unjson"
)

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
