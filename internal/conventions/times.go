package conventions

import (
	"fmt"
	"time"
)

// The time layout of Python's datetime.isoformat(timespec='microseconds') for
// an aware UTC datetime, which is what Kopf has written since it switched to
// aware datetimes; the offset is appended separately because Go's layouts
// have no literal "+00:00".
const isoLayout = "2006-01-02T15:04:05.000000"

// FormatTime formats t as Kopf writes timestamps: Python's
// datetime.isoformat(timespec='microseconds') of an aware UTC datetime, e.g.
// "2026-01-02T03:04:05.123456+00:00". Sub-microsecond precision is truncated,
// as Python's datetime has none.
func FormatTime(t time.Time) string {
	return string(AppendTime(make([]byte, 0, 32), t))
}

// AppendTime appends t formatted as FormatTime does, for encoders that
// build records in place.
func AppendTime(b []byte, t time.Time) []byte {
	b = t.UTC().AppendFormat(b, isoLayout)
	return append(b, "+00:00"...)
}

// ParseTime reads a timestamp in any form Kopf has written or read: Kopf
// parses with pyiso8601 (earlier with datetime.fromisoformat), so naive
// values (which are UTC: older Kopf wrote datetime.utcnow()), "Z", "+00:00"
// and other offsets, "T" or " " as the separator, "." or "," before the
// fraction, any number of fraction digits or none, and the reduced forms
// (YYYY, YYYY-MM, YYYY-MM-DD, hh, hh:mm, basic forms without separators) are
// all accepted. The result is in UTC and truncated to microseconds, as
// Python would hold it.
func ParseTime(s string) (time.Time, error) {
	p := isoParser{s: s}
	t, ok := p.parse()
	if !ok {
		return time.Time{}, fmt.Errorf("unsupported timestamp %.64q", s)
	}
	return t, nil
}

type isoParser struct {
	s string
	i int
}

func (p *isoParser) end() bool { return p.i >= len(p.s) }

func (p *isoParser) peek() byte {
	if p.end() {
		return 0
	}
	return p.s[p.i]
}

func (p *isoParser) isDigit(off int) bool {
	j := p.i + off
	return j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9'
}

// digits consumes between min and max digits, greedily.
func (p *isoParser) digits(min, max int) (int, bool) {
	n, v := 0, 0
	for n < max && p.isDigit(0) {
		v = v*10 + int(p.s[p.i]-'0')
		p.i++
		n++
	}
	return v, n >= min
}

func (p *isoParser) accept(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

// parse follows pyiso8601's grammar (greedily, without the regex engine's
// backtracking, which only matters for inputs no writer produces).
func (p *isoParser) parse() (time.Time, bool) {
	year, ok := p.digits(4, 4)
	if !ok {
		return time.Time{}, false
	}
	month, day := 1, 1
	var hour, minute, second, nanos int
	loc := time.UTC
	if !p.end() {
		if p.accept('-') {
			if month, ok = p.digits(1, 2); !ok {
				return time.Time{}, false
			}
		} else if month, ok = p.digits(2, 2); !ok || p.end() { // no YYYYMM
			return time.Time{}, false
		}
		if !p.end() {
			if p.accept('-') {
				if day, ok = p.digits(1, 2); !ok {
					return time.Time{}, false
				}
			} else if day, ok = p.digits(2, 2); !ok {
				return time.Time{}, false
			}
			if !p.end() {
				if c := p.peek(); c != 'T' && c != ' ' {
					return time.Time{}, false
				}
				p.i++
				if hour, ok = p.digits(2, 2); !ok {
					return time.Time{}, false
				}
				if p.isDigit(0) || (p.peek() == ':' && p.isDigit(1) && p.isDigit(2)) {
					p.accept(':')
					minute, _ = p.digits(2, 2)
					if p.isDigit(0) || (p.peek() == ':' && p.isDigit(1)) {
						p.accept(':')
						second, _ = p.digits(1, 2)
						if c := p.peek(); (c == '.' || c == ',') && p.isDigit(1) {
							p.i++
							nanos = p.fraction()
						}
					}
				}
				if !p.end() {
					if loc, ok = p.zone(); !ok {
						return time.Time{}, false
					}
				}
			}
		}
	}
	if !p.end() {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, second, nanos, loc)
	// time.Date normalises out-of-range values; Python's datetime rejects them.
	if year < 1 || t.Year() != year || int(t.Month()) != month || t.Day() != day ||
		t.Hour() != hour || t.Minute() != minute || t.Second() != second {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// fraction reads the fraction digits, keeping microseconds: pyiso8601
// truncates the fraction to Python's microsecond resolution.
func (p *isoParser) fraction() int {
	micros, n := 0, 0
	for p.isDigit(0) {
		if n < 6 {
			micros = micros*10 + int(p.s[p.i]-'0')
		}
		n++
		p.i++
	}
	for ; n < 6; n++ {
		micros *= 10
	}
	return micros * 1000
}

func (p *isoParser) zone() (*time.Location, bool) {
	if p.accept('Z') {
		return time.UTC, true
	}
	sign := 1
	switch {
	case p.accept('+'):
	case p.accept('-'):
		sign = -1
	default:
		return nil, false
	}
	h, ok := p.digits(2, 2)
	if !ok {
		return nil, false
	}
	p.accept(':')
	m := 0
	if p.isDigit(0) {
		if m, ok = p.digits(2, 2); !ok {
			return nil, false
		}
	}
	// Python's timezone accepts any minutes ("+05:60" is six hours) as long
	// as the whole offset stays under a day.
	offset := h*3600 + m*60
	if offset >= 24*3600 {
		return nil, false
	}
	return time.FixedZone("", sign*offset), true
}
