package persistence

import (
	"time"

	"github.com/kopfgo/kopfgo/internal/conventions"
)

// decodeFast reads the records that Kopf and kopfgo actually write (known
// keys only, ASCII strings without escapes, integer retries) without
// building a generic map, since records are read for every handler on every
// event. It gives up (ok == false) on anything else, and the caller falls
// back to encoding/json, so both paths always agree on what they accept:
// the fast path only ever accepts a subset, with the same result.
func decodeFast[T string | []byte](data T) (r Record, ok bool) {
	d := fastDecoder[T]{b: data}
	d.ws()
	if !d.eat('{') {
		return r, false
	}
	d.ws()
	if d.eat('}') {
		return r, d.end()
	}
	for {
		d.ws()
		key, ok := d.str()
		if !ok {
			return r, false
		}
		d.ws()
		if !d.eat(':') {
			return r, false
		}
		d.ws()
		if !d.value(key, &r) {
			return r, false
		}
		d.ws()
		if d.eat(',') {
			continue
		}
		if d.eat('}') {
			return r, d.end()
		}
		return r, false
	}
}

type fastDecoder[T string | []byte] struct {
	b T
	i int
}

func (d *fastDecoder[T]) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fastDecoder[T]) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *fastDecoder[T]) end() bool {
	d.ws()
	return d.i == len(d.b)
}

func (d *fastDecoder[T]) lit(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// str returns the raw bytes of a plain string: printable ASCII without
// escapes, which is everything Kopf writes for ids, reasons and timestamps.
func (d *fastDecoder[T]) str() (T, bool) {
	var none T
	if !d.eat('"') {
		return none, false
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		if c == '"' {
			s := d.b[start:d.i]
			d.i++
			return s, true
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return none, false
		}
		d.i++
	}
	return none, false
}

func (d *fastDecoder[T]) null() bool { return d.lit("null") }

func (d *fastDecoder[T]) value(key T, r *Record) bool {
	switch string(key) {
	case "started":
		return d.time(&r.Started)
	case "stopped":
		return d.time(&r.Stopped)
	case "delayed":
		return d.time(&r.Delayed)
	case "purpose":
		return d.text(&r.Purpose)
	case "message":
		return d.text(&r.Message)
	case "success":
		return d.bool(&r.Success)
	case "failure":
		return d.bool(&r.Failure)
	case "retries":
		if d.null() {
			r.Retries = 0
			return true
		}
		neg := d.eat('-')
		start, n := d.i, 0
		for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
			n = n*10 + int(d.b[d.i]-'0')
			d.i++
		}
		digits := d.i - start
		if digits == 0 || digits > 9 || (digits > 1 && d.b[start] == '0') {
			return false
		}
		if d.i < len(d.b) && (d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E') {
			return false
		}
		if neg {
			n = -n
		}
		r.Retries = n
		return true
	case "subrefs":
		if d.null() {
			r.Subrefs = nil
			return true
		}
		if !d.eat('[') {
			return false
		}
		var refs []string
		d.ws()
		if !d.eat(']') {
			for {
				d.ws()
				s, ok := d.str()
				if !ok {
					return false
				}
				refs = append(refs, string(s))
				d.ws()
				if d.eat(',') {
					continue
				}
				if d.eat(']') {
					break
				}
				return false
			}
		}
		r.Subrefs = refs
		return true
	}
	return false // unknown keys: leave them to encoding/json
}

func (d *fastDecoder[T]) time(dst **time.Time) bool {
	if d.null() {
		*dst = nil
		return true
	}
	s, ok := d.str()
	if !ok {
		return false
	}
	t, err := conventions.ParseTime(string(s))
	if err != nil {
		return false
	}
	*dst = &t
	return true
}

func (d *fastDecoder[T]) text(dst *string) bool {
	if d.null() {
		*dst = ""
		return true
	}
	s, ok := d.str()
	if !ok {
		return false
	}
	*dst = string(s)
	return true
}

func (d *fastDecoder[T]) bool(dst *bool) bool {
	switch {
	case d.lit("true"):
		*dst = true
	case d.lit("false"):
		*dst = false
	case d.null():
		*dst = false
	default:
		return false
	}
	return true
}
