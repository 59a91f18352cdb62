package unjson

import (
	"fmt"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is the nesting sigs.k8s.io/json (like encoding/json) accepts;
// deeper input is an error there, so it is one here. It also bounds the
// recursion of the parser.
const maxDepth = 10000

// SyntaxError reports input that is not one well-formed JSON value (or a
// number beyond float64), and where.
type SyntaxError struct {
	// Offset is where the problem is: the index of the offending byte in
	// the input (for a Decoder: in the whole stream), or the input's length
	// if it ended too early.
	Offset int64
	msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("unjson: %s at byte offset %d", e.msg, e.Offset)
}

// Unmarshal decodes one JSON value, which may be surrounded by whitespace,
// into the unstructured form (see the package doc). Anything else in data
// is an error. Within one call each distinct object key is allocated once
// (up to the intern table's bound), so the items of a list share them.
func Unmarshal(data []byte) (any, error) {
	p := parsers.Get().(*parser)
	defer p.release()
	return p.parse(data)
}

// parsers keeps the scratch space and the intern tables between calls of
// Unmarshal. Sharing them is safe: the tables hold only immutable strings.
var parsers = sync.Pool{New: func() any { return new(parser) }}

// parser decodes one value from data in a single pass: it checks the
// syntax as it builds the result, and copies every string out of data, so
// the result never refers to data.
type parser struct {
	data  []byte
	pos   int
	depth int

	keys   keys
	values valueCache

	// Members and elements are gathered here until their container ends,
	// so that each map and slice is made once, at its final size.
	members []member
	elems   []any
	// text holds a string while its escapes are decoded.
	text []byte
}

type member struct {
	key string
	val any
}

// Scratch bigger than this (after one huge value) is not kept for the next.
const maxKeptScratch = 1 << 14

func (p *parser) release() {
	p.data = nil
	if cap(p.members) > maxKeptScratch {
		p.members = nil
	}
	if cap(p.elems) > maxKeptScratch {
		p.elems = nil
	}
	if cap(p.text) > maxKeptScratch {
		p.text = nil
	}
	parsers.Put(p)
}

func (p *parser) parse(data []byte) (any, error) {
	p.keys.reset()
	return p.parseNested(data, 0)
}

// parseNested decodes a value found depth levels deep inside a larger one,
// sharing its keys: the key table is not reset.
func (p *parser) parseNested(data []byte, depth int) (any, error) {
	p.data, p.pos, p.depth = data, 0, depth
	v, err := p.value()
	if err == nil {
		p.skipSpace()
		if p.pos < len(p.data) {
			err = p.errorHere("after top-level value")
		}
	}
	if err != nil {
		// An error leaves the scratch holding parts of the value.
		clear(p.members[:cap(p.members)])
		clear(p.elems[:cap(p.elems)])
		p.members, p.elems = p.members[:0], p.elems[:0]
		return nil, err
	}
	return v, nil
}

// key decodes an object key, a string literal that is all of data.
func (p *parser) key(data []byte) (string, error) {
	p.data, p.pos = data, 0
	b, err := p.string()
	if err != nil {
		return "", err
	}
	return p.keys.intern(b), nil
}

// isSpace is JSON's whitespace: nothing else may surround or separate
// tokens.
var isSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) && isSpace[p.data[p.pos]] {
		p.pos++
	}
}

func (p *parser) errorAt(pos int, msg string) error {
	return &SyntaxError{Offset: int64(pos), msg: msg}
}

// errorEnd reports input that ends inside a value. The Decoder relies on
// its offset (the input's length) to tell it from other errors.
func (p *parser) errorEnd() error {
	return p.errorAt(len(p.data), "unexpected end of JSON input")
}

// errorHere reports the byte at p.pos, or the end of the input.
func (p *parser) errorHere(context string) error {
	if p.pos >= len(p.data) {
		return p.errorEnd()
	}
	return p.errorAt(p.pos, "invalid character "+quoteChar(p.data[p.pos])+" "+context)
}

func quoteChar(c byte) string {
	switch {
	case c == '\'':
		return `'\''`
	case c == '"':
		return `'"'`
	case c < utf8.RuneSelf && strconv.IsPrint(rune(c)):
		return "'" + string(rune(c)) + "'"
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

func (p *parser) value() (any, error) {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return nil, p.errorEnd()
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		b, err := p.string()
		if err != nil {
			return nil, err
		}
		return p.values.box(b), nil
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, p.errorHere("looking for beginning of value")
}

func (p *parser) literal(word string) error {
	for i := 0; i < len(word); i++ {
		if p.pos >= len(p.data) || p.data[p.pos] != word[i] {
			return p.errorHere("in literal " + word)
		}
		p.pos++
	}
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.errorAt(p.pos, "nesting deeper than 10000 levels")
	}
	p.pos++ // the opening bracket
	p.skipSpace()
	return nil
}

func (p *parser) object() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	base := len(p.members)
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
	} else {
		for {
			if p.pos >= len(p.data) || p.data[p.pos] != '"' {
				return nil, p.errorHere("looking for beginning of object key string")
			}
			b, err := p.string()
			if err != nil {
				return nil, err
			}
			key := p.keys.intern(b)
			p.skipSpace()
			if p.pos >= len(p.data) || p.data[p.pos] != ':' {
				return nil, p.errorHere("after object key")
			}
			p.pos++
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			p.members = append(p.members, member{key, v})
			p.skipSpace()
			if p.pos < len(p.data) && p.data[p.pos] == ',' {
				p.pos++
				p.skipSpace()
				continue
			}
			if p.pos < len(p.data) && p.data[p.pos] == '}' {
				p.pos++
				break
			}
			return nil, p.errorHere("after object key:value pair")
		}
	}
	members := p.members[base:]
	m := make(map[string]any, len(members))
	for _, kv := range members {
		m[kv.key] = kv.val // a repeated key: the last one wins
	}
	clear(members) // the scratch must not keep the values alive
	p.members = p.members[:base]
	p.depth--
	return m, nil
}

func (p *parser) array() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	base := len(p.elems)
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
	} else {
		for {
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			p.elems = append(p.elems, v)
			p.skipSpace()
			if p.pos < len(p.data) && p.data[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.pos < len(p.data) && p.data[p.pos] == ']' {
				p.pos++
				break
			}
			return nil, p.errorHere("after array element")
		}
	}
	// Never nil, even when empty: the reference decodes [] to a non-nil
	// empty slice, and the difference is visible (reflect.DeepEqual).
	a := make([]any, len(p.elems)-base)
	copy(a, p.elems[base:])
	clear(p.elems[base:])
	p.elems = p.elems[:base]
	p.depth--
	return a, nil
}

// plain marks the bytes a string can hold as they are: printable ASCII but
// for the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// string consumes the string literal at p.pos and returns its decoded
// bytes, which are either in p.data or in p.text (valid until the next
// call).
func (p *parser) string() ([]byte, error) {
	start := p.pos + 1
	i := start
	simple, ascii := true, true
	for {
		for i < len(p.data) && plain[p.data[i]] {
			i++
		}
		if i >= len(p.data) {
			return nil, p.errorEnd()
		}
		switch c := p.data[i]; {
		case c == '"':
			p.pos = i + 1
			b := p.data[start:i]
			if simple && (ascii || utf8.Valid(b)) {
				return b, nil
			}
			return p.unescape(b), nil
		case c == '\\':
			simple = false
			n, err := p.escapeLen(i)
			if err != nil {
				return nil, err
			}
			i += n
		case c < ' ':
			p.pos = i
			return nil, p.errorHere("in string literal")
		default: // not ASCII
			ascii = false
			i++
		}
	}
}

// escapeLen checks the escape sequence at p.data[i] (a backslash) and
// returns its length.
func (p *parser) escapeLen(i int) (int, error) {
	if i+1 >= len(p.data) {
		return 0, p.errorEnd()
	}
	switch p.data[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case 'u':
		for j := i + 2; j < i+6; j++ {
			if j >= len(p.data) {
				return 0, p.errorEnd()
			}
			if hexValue(p.data[j]) < 0 {
				p.pos = j
				return 0, p.errorHere("in \\u hexadecimal character escape")
			}
		}
		return 6, nil
	}
	p.pos = i + 1
	return 0, p.errorHere("in string escape code")
}

func hexValue(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// u4 decodes the \uXXXX at the start of b, or returns -1 if there is none.
// The escapes were checked already.
func u4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	return hexValue(b[2])<<12 | hexValue(b[3])<<8 | hexValue(b[4])<<4 | hexValue(b[5])
}

// unescape decodes the content of a checked string literal that has escapes
// or bytes that are not UTF-8. As the reference does, it replaces each
// byte of invalid UTF-8 and each unpaired surrogate escape by U+FFFD.
func (p *parser) unescape(b []byte) []byte {
	t := p.text[:0]
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '\\':
			switch e := b[i+1]; e {
			case 'u':
				r := u4(b[i:])
				i += 6
				if utf16.IsSurrogate(r) {
					if pair := utf16.DecodeRune(r, u4(b[i:])); pair != utf8.RuneError {
						r = pair
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				t = utf8.AppendRune(t, r)
				continue
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			default: // " \ /
				c = e
			}
			t = append(t, c)
			i += 2
		case c < utf8.RuneSelf:
			j := i + 1
			for j < len(b) && b[j] < utf8.RuneSelf && b[j] != '\\' {
				j++
			}
			t = append(t, b[i:j]...)
			i = j
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				t = utf8.AppendRune(t, utf8.RuneError)
			} else {
				t = append(t, b[i:i+n]...)
			}
			i += n
		}
	}
	p.text = t
	return t
}

// number consumes a number literal. Like the reference, it yields an int64
// when the literal has neither fraction nor exponent and fits, and a
// float64 otherwise; a number beyond float64 is an error.
func (p *parser) number() (any, error) {
	d := p.data
	start := p.pos
	i := start
	if d[i] == '-' {
		i++
	}
	var n uint64
	digits := 0
	switch {
	case i >= len(d):
		return nil, p.errorEnd()
	case d[i] == '0':
		i++
		digits = 1
	case '1' <= d[i] && d[i] <= '9':
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			n = n*10 + uint64(d[i]-'0') // may wrap: then digits > 18
			i++
			digits++
		}
	default:
		p.pos = i
		return nil, p.errorHere("in numeric literal")
	}
	integer := true
	if i < len(d) && d[i] == '.' {
		integer = false
		var err error
		if i, err = p.digits(i + 1); err != nil {
			return nil, err
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		integer = false
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		var err error
		if i, err = p.digits(i); err != nil {
			return nil, err
		}
	}
	p.pos = i
	text := d[start:i]
	if integer {
		if digits <= 18 { // cannot overflow int64
			if text[0] == '-' {
				return -int64(n), nil
			}
			return int64(n), nil
		}
		if v, err := strconv.ParseInt(string(text), 10, 64); err == nil {
			return v, nil
		}
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil {
		return nil, p.errorAt(start, "number "+string(text)+" is out of the range of float64")
	}
	return f, nil
}

// digits consumes one or more digits from d[i:] and returns where they end.
func (p *parser) digits(i int) (int, error) {
	d := p.data
	if i >= len(d) || d[i] < '0' || d[i] > '9' {
		p.pos = i
		return 0, p.errorHere("in numeric literal")
	}
	for i < len(d) && '0' <= d[i] && d[i] <= '9' {
		i++
	}
	return i, nil
}
