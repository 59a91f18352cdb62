package pyrepr

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Repr returns Python's repr() of v. Maps are dicts with sorted keys,
// slices are lists, Tuple is a tuple; values that JSON cannot hold (and
// unstructured objects never do) come out as '<unrepresentable>'.
func Repr(v any) string {
	var b strings.Builder
	write(&b, v)
	return b.String()
}

// Tuple is a sequence rendered as a Python tuple: (a, b), (a,), ().
type Tuple []any

// Float returns Python's repr() of a float: the shortest text that reads
// back as the same number, with ".0" on whole numbers ("60.0", "1.5",
// "1e-05", "1e+16").
func Float(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-4 || abs >= 1e16) {
		// Go and Python both write at least two exponent digits: "1e-05".
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

func write(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case string:
		str(b, x)
	case int:
		b.WriteString(strconv.Itoa(x))
	case int32:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(Float(x))
	case float32:
		b.WriteString(Float(float64(x)))
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			str(b, k)
			b.WriteString(": ")
			write(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, it := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			write(b, it)
		}
		b.WriteByte(']')
	case []string:
		b.WriteByte('[')
		for i, it := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			str(b, it)
		}
		b.WriteByte(']')
	case Tuple:
		b.WriteByte('(')
		for i, it := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			write(b, it)
		}
		if len(x) == 1 {
			b.WriteByte(',')
		}
		b.WriteByte(')')
	default:
		str(b, "<unrepresentable>")
	}
}

// str writes a Python str's repr: single quotes unless the text has a
// single quote and no double quote; backslash escapes for the quote, the
// backslash, \t \n \r, and other non-printable characters.
func str(b *strings.Builder, s string) {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	b.WriteByte(q)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			// Not UTF-8: Python would not have decoded it; show the byte.
			b.WriteString(`\x` + hex2(s[i]))
			i++
			continue
		}
		i += size
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x` + hex2(byte(r)))
		case r > 0x7f && !unicode.IsPrint(r):
			switch {
			case r <= 0xff:
				b.WriteString(`\x` + hex2(byte(r)))
			case r <= 0xffff:
				b.WriteString(`\u` + strconv.FormatInt(int64(r)|0x10000, 16)[1:])
			default:
				b.WriteString(`\U` + strconv.FormatInt(int64(r)|0x100000000, 16)[1:])
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0xf]})
}
