package unjson

import (
	"bytes"
	"fmt"
	"io"
)

// Decoder reads a stream of JSON values, such as a watch stream's events:
// values one after another, with or without whitespace between them.
// Numbers and the literals true, false and null must be followed by
// whitespace or a bracket or quote, as they are in any sane stream (unlike
// encoding/json, "truefalse" is an error here, not two values).
//
// It finds where each value ends with a cheap scan over its buffer (only
// quotes, backslashes and brackets matter), reading more as needed, then
// decodes that frame in place. Object keys are interned for the Decoder's
// lifetime (in a bounded table), so the objects of one stream share them.
type Decoder struct {
	r   io.Reader
	buf []byte
	// buf[start:end] is read and not yet decoded; it begins at byte off of
	// the stream.
	start, end int
	off        int64
	rerr       error // from r, returned once the buffered bytes are used
	err        error // the stream is broken: every later call returns it

	p parser
}

// bufSize fits dozens of typical objects, so one read serves many values.
// A larger value grows the buffer; the buffer shrinks back once values are
// small again, so one huge object does not pin a huge buffer.
const bufSize = 32 << 10

// NewDecoder reads values from r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{r: r}
}

// Decode returns the next value; io.EOF at a clean end of the stream (only
// whitespace after the last value). A stream that ends inside a value gives
// an error for which errors.Is(err, io.ErrUnexpectedEOF) holds; malformed
// JSON gives a *SyntaxError with the offset in the stream. After an error,
// every call returns it again.
func (d *Decoder) Decode() (any, error) {
	if d.err != nil {
		return nil, d.err
	}
	v, err := d.decode()
	if err != nil {
		d.err = err
		return nil, err
	}
	return v, nil
}

func (d *Decoder) decode() (any, error) {
	if err := d.skipSpace(); err != nil {
		return nil, err
	}
	d.p.keys.reset()
	return d.value(0)
}

// skipSpace moves to the next byte that is not whitespace, reading as
// needed; io.EOF if the stream ends first.
func (d *Decoder) skipSpace() error {
	for {
		for d.start < d.end && isSpace[d.buf[d.start]] {
			d.start++
			d.off++
		}
		if d.start < d.end {
			return nil
		}
		if err := d.fill(); err != nil {
			return err
		}
	}
}

// value decodes the value at d.buf[d.start] (not whitespace), which is
// depth levels deep inside the value being decoded.
func (d *Decoder) value(depth int) (any, error) {
	n, complete, err := d.frame(depth)
	if err != nil {
		return nil, err
	}
	v, err := d.p.parseNested(d.buf[d.start:d.start+n], depth)
	if err := d.consume(n, complete, err); err != nil {
		return nil, err
	}
	return v, nil
}

// consume moves past a frame of n bytes once it is parsed, or turns the
// parser's error into the stream's.
func (d *Decoder) consume(n int, complete bool, err error) error {
	if err != nil {
		if se, ok := err.(*SyntaxError); ok {
			// Only running out of input is reported at the frame's end.
			if !complete && se.Offset == int64(n) {
				return d.truncated()
			}
			se.Offset += d.off
		}
		return err
	}
	d.start += n
	d.off += int64(n)
	d.shrink(n)
	return nil
}

// DecodeStreaming decodes the next value, which must be an object, without
// ever holding the array under key whole: each of its elements is passed
// to each as soon as it is decoded, and then forgotten by the Decoder, so
// that a list's items take no more buffer than the largest of them. The
// elements and the returned members (all but key) are what Decode would
// give, sharing keys in the same way; the members may come in any order.
//
// An absent or null key is an empty array. A key holding anything else is
// an error, and so is a key that appears twice (where Decode keeps the last
// one), as the elements handed out cannot be taken back. Elements are
// handed out before the rest of the object is read: when an error is
// returned, the object was broken and what each received is not to be
// used. each's error stops decoding and is returned as it is. Otherwise
// the errors, and the io.EOF at a clean end, are Decode's, and after any
// error every call returns it again.
func (d *Decoder) DecodeStreaming(key string, each func(elem any) error) (rest map[string]any, err error) {
	if d.err != nil {
		return nil, d.err
	}
	rest, err = d.decodeStreaming(key, handout{decoded: each})
	if err != nil {
		d.err = err
		return nil, err
	}
	return rest, nil
}

func (d *Decoder) decodeStreaming(key string, each handout) (map[string]any, error) {
	if err := d.skipSpace(); err != nil {
		return nil, err
	}
	if d.buf[d.start] != '{' {
		return nil, fmt.Errorf("unjson: the value at byte offset %d is not an object", d.off)
	}
	d.p.keys.reset()
	d.advance(1)
	rest := map[string]any{}
	seen := false
	for first := true; ; first = false {
		if err := d.skipSpaceInside(); err != nil {
			return nil, err
		}
		if first && d.buf[d.start] == '}' {
			d.advance(1)
			return rest, nil
		}
		if d.buf[d.start] != '"' {
			return nil, d.unexpected("looking for beginning of object key string")
		}
		k, err := d.key()
		if err != nil {
			return nil, err
		}
		if err := d.skipSpaceInside(); err != nil {
			return nil, err
		}
		if d.buf[d.start] != ':' {
			return nil, d.unexpected("after object key")
		}
		d.advance(1)
		if err := d.skipSpaceInside(); err != nil {
			return nil, err
		}
		if k == key {
			if seen {
				return nil, fmt.Errorf("unjson: the object has a second %q at byte offset %d", key, d.off)
			}
			seen = true
			if err := d.elements(key, each); err != nil {
				return nil, err
			}
		} else {
			v, err := d.value(1)
			if err != nil {
				return nil, err
			}
			rest[k] = v // a repeated key: the last one wins
		}
		if err := d.skipSpaceInside(); err != nil {
			return nil, err
		}
		switch d.buf[d.start] {
		case ',':
			d.advance(1)
		case '}':
			d.advance(1)
			return rest, nil
		default:
			return nil, d.unexpected("after object key:value pair")
		}
	}
}

// elements passes on the elements of the array at d.buf[d.start], one
// level inside the object being decoded, or nothing for a null.
func (d *Decoder) elements(key string, each handout) error {
	switch d.buf[d.start] {
	case 'n': // null, or junk for the parser to report
		_, err := d.value(1)
		return err
	case '[':
	default:
		return fmt.Errorf("unjson: the %q of the object at byte offset %d is not an array", key, d.off)
	}
	d.advance(1)
	for first := true; ; first = false {
		if err := d.skipSpaceInside(); err != nil {
			return err
		}
		if first && d.buf[d.start] == ']' {
			d.advance(1)
			return nil
		}
		if err := each.element(d); err != nil {
			return err
		}
		if err := d.skipSpaceInside(); err != nil {
			return err
		}
		switch d.buf[d.start] {
		case ',':
			d.advance(1)
		case ']':
			d.advance(1)
			return nil
		default:
			return d.unexpected("after array element")
		}
	}
}

// key decodes the object key at d.buf[d.start], a quote.
func (d *Decoder) key() (string, error) {
	n, complete, err := d.frameString()
	if err != nil {
		return "", err
	}
	k, err := d.p.key(d.buf[d.start : d.start+n])
	if err := d.consume(n, complete, err); err != nil {
		return "", err
	}
	return k, nil
}

// skipSpaceInside is skipSpace inside a value, where the stream must not
// end.
func (d *Decoder) skipSpaceInside() error {
	err := d.skipSpace()
	if err == io.EOF {
		return d.truncated()
	}
	return err
}

// advance moves past n bytes of punctuation.
func (d *Decoder) advance(n int) {
	d.start += n
	d.off += int64(n)
}

// unexpected reports the byte at d.buf[d.start] as the parser would.
func (d *Decoder) unexpected(context string) error {
	return &SyntaxError{Offset: d.off, msg: "invalid character " + quoteChar(d.buf[d.start]) + " " + context}
}

func (d *Decoder) truncated() error {
	return fmt.Errorf("unjson: the stream ends inside the value at byte offset %d: %w", d.off, io.ErrUnexpectedEOF)
}

// frame returns the length of the value at d.buf[d.start], which is not
// whitespace and is depth levels deep, reading until the value ends or the
// stream does (then the frame is not complete). Only brackets and strings
// are followed: the parser checks the rest.
func (d *Decoder) frame(depth int) (n int, complete bool, err error) {
	switch d.buf[d.start] {
	case '{', '[':
		return d.frameContainer(depth)
	case '"':
		return d.frameString()
	case '}', ']', ',', ':':
		return 1, true, nil // an error, for the parser to report
	}
	return d.frameScalar()
}

// frameContainer finds the bracket closing the one at d.buf[d.start],
// skipping strings.
func (d *Decoder) frameContainer(outer int) (int, bool, error) {
	i, depth, inString := 0, outer, false
	for {
		b := d.buf[d.start:d.end]
		for i < len(b) {
			if inString {
				q := bytes.IndexByte(b[i:], '"')
				if q < 0 {
					i = len(b)
					break
				}
				i += q + 1
				inString = escaped(b, i-1)
				continue
			}
			c := b[i]
			i++
			switch c {
			case '"':
				inString = true
			case '{', '[':
				depth++
				if depth > maxDepth {
					return 0, false, &SyntaxError{Offset: d.off + int64(i-1), msg: "nesting deeper than 10000 levels"}
				}
			case '}', ']':
				depth--
				if depth == outer {
					return i, true, nil
				}
			}
		}
		if err := d.fill(); err == io.EOF {
			return i, false, nil
		} else if err != nil {
			return 0, false, err
		}
	}
}

// escaped reports whether the quote at b[q] is escaped: preceded by an odd
// number of backslashes. The frame is always whole in the buffer, so the
// backslashes are all there.
func escaped(b []byte, q int) bool {
	k := q
	for k > 0 && b[k-1] == '\\' {
		k--
	}
	return (q-k)%2 == 1
}

func (d *Decoder) frameString() (int, bool, error) {
	i := 1
	for {
		b := d.buf[d.start:d.end]
		for i < len(b) {
			q := bytes.IndexByte(b[i:], '"')
			if q < 0 {
				i = len(b)
				break
			}
			i += q + 1
			if !escaped(b, i-1) {
				return i, true, nil
			}
		}
		if err := d.fill(); err == io.EOF {
			return i, false, nil
		} else if err != nil {
			return 0, false, err
		}
	}
}

// delimits marks the bytes that end a number or literal.
var delimits = [256]bool{
	' ': true, '\t': true, '\n': true, '\r': true,
	'{': true, '}': true, '[': true, ']': true, '"': true, ',': true, ':': true,
}

// frameScalar finds the end of a number or literal (or of junk, which the
// parser rejects): the next delimiter, or the end of the stream.
func (d *Decoder) frameScalar() (int, bool, error) {
	i := 0
	for {
		b := d.buf[d.start:d.end]
		for i < len(b) && !delimits[b[i]] {
			i++
		}
		if i < len(b) {
			return i, true, nil
		}
		if err := d.fill(); err == io.EOF {
			return i, false, nil
		} else if err != nil {
			return 0, false, err
		}
	}
}

// fill reads more of the stream into the buffer, making room first:
// dropping decoded bytes, or growing the buffer when the current value
// fills it.
func (d *Decoder) fill() error {
	if d.rerr != nil {
		return d.rerr
	}
	if d.start == d.end {
		d.start, d.end = 0, 0
	}
	if d.buf == nil {
		d.buf = make([]byte, bufSize)
	}
	if d.end == len(d.buf) {
		// Grow when the value in progress fills most of the buffer, so
		// that a large value is not copied down once per read.
		to := d.buf
		if d.end-d.start > len(d.buf)/2 {
			to = make([]byte, 2*len(d.buf))
		}
		d.end = copy(to, d.buf[d.start:d.end])
		d.start = 0
		d.buf = to
	}
	// Like bufio, give up on a reader that keeps returning nothing.
	for range 100 {
		n, err := d.r.Read(d.buf[d.end:])
		d.end += n
		if err != nil {
			if err != io.EOF {
				err = fmt.Errorf("unjson: reading the stream: %w", err)
			}
			d.rerr = err
			if n > 0 {
				return nil
			}
			return err
		}
		if n > 0 {
			return nil
		}
	}
	d.rerr = fmt.Errorf("unjson: reading the stream: %w", io.ErrNoProgress)
	return d.rerr
}

// shrink gives back a buffer grown for a large value once a small value
// follows (not after every large value: a run of them keeps it).
func (d *Decoder) shrink(n int) {
	if len(d.buf) <= bufSize || n > bufSize/2 || d.end-d.start > bufSize/2 {
		return
	}
	small := make([]byte, bufSize)
	d.end = copy(small, d.buf[d.start:d.end])
	d.start = 0
	d.buf = small
}
