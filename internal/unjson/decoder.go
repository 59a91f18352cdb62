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
	// Skip the whitespace before the value.
	for {
		for d.start < d.end && isSpace[d.buf[d.start]] {
			d.start++
			d.off++
		}
		if d.start < d.end {
			break
		}
		if err := d.fill(); err != nil {
			return nil, err
		}
	}

	n, complete, err := d.frame()
	if err != nil {
		return nil, err
	}
	v, err := d.p.parse(d.buf[d.start : d.start+n])
	if err != nil {
		if se, ok := err.(*SyntaxError); ok {
			// Only running out of input is reported at the frame's end.
			if !complete && se.Offset == int64(n) {
				return nil, d.truncated()
			}
			se.Offset += d.off
		}
		return nil, err
	}
	d.start += n
	d.off += int64(n)
	d.shrink(n)
	return v, nil
}

func (d *Decoder) truncated() error {
	return fmt.Errorf("unjson: the stream ends inside the value at byte offset %d: %w", d.off, io.ErrUnexpectedEOF)
}

// frame returns the length of the value at d.buf[d.start], which is not
// whitespace, reading until the value ends or the stream does (then the
// frame is not complete). Only brackets and strings are followed: the
// parser checks the rest.
func (d *Decoder) frame() (n int, complete bool, err error) {
	switch d.buf[d.start] {
	case '{', '[':
		return d.frameContainer()
	case '"':
		return d.frameString()
	case '}', ']', ',', ':':
		return 1, true, nil // an error, for the parser to report
	}
	return d.frameScalar()
}

// frameContainer finds the bracket closing the one at d.buf[d.start],
// skipping strings.
func (d *Decoder) frameContainer() (int, bool, error) {
	i, depth, inString := 0, 0, false
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
				if depth == 0 {
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
