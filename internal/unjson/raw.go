package unjson

import (
	"bytes"
	"fmt"
)

// Raw values: a watch stream's events and a list's items can be taken as
// their JSON bytes instead of decoded, for callers that keep objects in
// their encoded form (a fraction of the decoded form's memory) and decode
// them only when they are used. The bytes are framed as Decode frames
// values: only brackets and strings are followed, so the parts of a raw
// value that are never decoded are not checked; Members checks the
// structure of the objects it walks.

// DecodeRaw returns the bytes of the next value, as Decode would find it;
// they are valid only until the next call. Errors are Decode's, except that
// the value's contents are not checked.
func (d *Decoder) DecodeRaw() ([]byte, error) {
	if d.err != nil {
		return nil, d.err
	}
	b, err := d.raw(0)
	if err != nil {
		d.err = err // io.EOF at a clean end, as Decode
		return nil, err
	}
	return b, nil
}

func (d *Decoder) raw(depth int) ([]byte, error) {
	if err := d.skipSpace(); err != nil {
		return nil, err
	}
	return d.rawValue(depth)
}

// rawValue frames the value at d.buf[d.start] and moves past it.
func (d *Decoder) rawValue(depth int) ([]byte, error) {
	n, complete, err := d.frame(depth)
	if err != nil {
		return nil, err
	}
	if !complete {
		return nil, d.truncated()
	}
	b := d.buf[d.start : d.start+n]
	d.start += n
	d.off += int64(n)
	// No shrink: b lives in the buffer until the next call.
	return b, nil
}

// DecodeStreamingRaw is DecodeStreaming with each element passed as its
// bytes (valid only during the call of each) rather than decoded.
func (d *Decoder) DecodeStreamingRaw(key string, each func(elem []byte) error) (rest map[string]any, err error) {
	if d.err != nil {
		return nil, d.err
	}
	rest, err = d.decodeStreaming(key, handout{raw: each})
	if err != nil {
		d.err = err
		return nil, err
	}
	return rest, nil
}

// handout is how decodeStreaming hands out elements: decoded, or raw.
type handout struct {
	decoded func(elem any) error
	raw     func(elem []byte) error
}

func (s handout) element(d *Decoder) error {
	if s.raw != nil {
		b, err := d.rawValue(2)
		if err != nil {
			return err
		}
		return s.raw(b)
	}
	v, err := d.value(2)
	if err != nil {
		return err
	}
	return s.decoded(v)
}

// Member is one member of an object walked by Members: data[KeyStart] is
// the opening quote of its key, data[ValueStart:ValueEnd] is its value.
type Member struct {
	// Key is the member's key as it is written between the quotes; a key
	// with escapes is decoded (see Members).
	Key                            []byte
	KeyStart, ValueStart, ValueEnd int
}

// Members walks the members of the object at the start of data (after
// whitespace), in order, and returns the offset just past it. The
// structure of the object is checked (keys, colons, commas, brackets), and
// each value is framed but not decoded. fn's error stops the walk and is
// returned as it is; m.Key is valid only during the call.
func Members(data []byte, fn func(m Member) error) (end int, err error) {
	i := skipSpaceIn(data, 0)
	if i >= len(data) || data[i] != '{' {
		return 0, syntaxAt(data, i, "looking for beginning of object")
	}
	i++
	for first := true; ; first = false {
		i = skipSpaceIn(data, i)
		if i >= len(data) {
			return 0, syntaxAt(data, i, "")
		}
		if first && data[i] == '}' {
			return i + 1, nil
		}
		if data[i] != '"' {
			return 0, syntaxAt(data, i, "looking for beginning of object key string")
		}
		m := Member{KeyStart: i}
		ke := stringEnd(data, i)
		if ke < 0 {
			return 0, syntaxAt(data, len(data), "")
		}
		m.Key = data[i+1 : ke-1]
		if bytes.IndexByte(m.Key, '\\') >= 0 {
			k, err := Unmarshal(data[i:ke])
			if err != nil {
				return 0, err
			}
			m.Key = []byte(k.(string))
		}
		i = skipSpaceIn(data, ke)
		if i >= len(data) || data[i] != ':' {
			return 0, syntaxAt(data, i, "after object key")
		}
		i = skipSpaceIn(data, i+1)
		if i >= len(data) {
			return 0, syntaxAt(data, i, "")
		}
		m.ValueStart = i
		m.ValueEnd = valueEnd(data, i)
		if m.ValueEnd < 0 {
			return 0, syntaxAt(data, len(data), "")
		}
		if err := fn(m); err != nil {
			return 0, err
		}
		i = skipSpaceIn(data, m.ValueEnd)
		if i >= len(data) {
			return 0, syntaxAt(data, i, "")
		}
		switch data[i] {
		case ',':
			i++
		case '}':
			return i + 1, nil
		default:
			return 0, syntaxAt(data, i, "after object key:value pair")
		}
	}
}

// String decodes a JSON string literal, all of data; ok is false for
// anything else (including null).
func String(data []byte) (s string, ok bool) {
	if len(data) >= 2 && data[0] == '"' && data[len(data)-1] == '"' {
		inner := data[1 : len(data)-1]
		if bytes.IndexByte(inner, '\\') < 0 && bytes.IndexByte(inner, '"') < 0 {
			ascii := true
			for _, c := range inner {
				if c < ' ' || c >= 0x80 {
					ascii = false
					break
				}
			}
			if ascii {
				return string(inner), true
			}
		}
	}
	v, err := Unmarshal(data)
	if err != nil {
		return "", false
	}
	s, ok = v.(string)
	return s, ok
}

func skipSpaceIn(data []byte, i int) int {
	for i < len(data) && isSpace[data[i]] {
		i++
	}
	return i
}

// stringEnd returns the offset past the string literal at data[i] (a
// quote), or -1 if data ends inside it.
func stringEnd(data []byte, i int) int {
	i++
	for {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			return -1
		}
		i += q + 1
		if !escaped(data, i-1) {
			return i
		}
	}
}

// valueEnd returns the offset past the value at data[i] (not whitespace),
// framed as the Decoder frames values, or -1 if data ends inside it.
func valueEnd(data []byte, i int) int {
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			c := data[i]
			switch c {
			case '"':
				e := stringEnd(data, i)
				if e < 0 {
					return -1
				}
				i = e
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	for i < len(data) && !delimits[data[i]] {
		i++
	}
	return i
}

func syntaxAt(data []byte, i int, context string) error {
	if i >= len(data) {
		return &SyntaxError{Offset: int64(len(data)), msg: "unexpected end of JSON input"}
	}
	return &SyntaxError{Offset: int64(i), msg: fmt.Sprintf("invalid character %s %s", quoteChar(data[i]), context)}
}
