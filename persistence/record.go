package persistence

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/kopfgo/kopfgo/internal/conventions"
)

// ErrCorrupt marks a stored record that is present but cannot be read. The
// caller should warn and treat the handler as having no record: a hand-edited
// or truncated annotation must neither crash the operator nor make it skip
// the object.
var ErrCorrupt = errors.New("corrupt progress record")

// CorruptError names the place of a corrupt record, so that the warning tells
// the user which annotation or field to fix or delete.
type CorruptError struct {
	Key string // the annotation key or the dotted field path
	Err error  // wraps ErrCorrupt
}

func (e *CorruptError) Error() string { return fmt.Sprintf("%s at %q", e.Err, e.Key) }

func (e *CorruptError) Unwrap() error { return e.Err }

// Record is one handler's progress within a handling cycle, as Kopf stores it
// (kopf.ProgressRecord). A zero time pointer, an empty string and an empty
// slice all mean "None" in Kopf's terms.
type Record struct {
	Started, Stopped, Delayed *time.Time // UTC
	Purpose                   string     // the cause reason: "create", "update", "delete", "resume"
	Retries                   int
	Success, Failure          bool
	Message                   string
	Subrefs                   []string // sub-handler ids of all levels; written sorted
}

// MarshalJSON encodes the record the way Kopf's annotations storage does with
// verbose=False. Note that json.Marshal re-escapes "<", ">" and "&" in what
// this returns (its HTML-safe default), so call this method directly, or
// use an Encoder with SetEscapeHTML(false), when the bytes must be Kopf's.
func (r Record) MarshalJSON() ([]byte, error) {
	return r.appendJSON(make([]byte, 0, 192), false), nil
}

// appendJSON appends the record's JSON as Kopf writes it: json.dumps with
// separators (',', ':') and Python's default ASCII-only escaping, keys in the
// order of Kopf's HandlerState.for_storage(). Kopf always sets retries,
// success and failure (they are never None), so they are always written;
// the other fields are left out when None unless verbose, in which case they
// are written as null.
func (r Record) appendJSON(b []byte, verbose bool) []byte {
	b = append(b, '{')
	first := true
	key := func(name string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
	}
	for _, f := range [...]struct {
		name string
		t    *time.Time
	}{{"started", r.Started}, {"stopped", r.Stopped}, {"delayed", r.Delayed}} {
		if f.t != nil {
			key(f.name)
			b = append(b, '"')
			b = conventions.AppendTime(b, *f.t)
			b = append(b, '"')
		} else if verbose {
			key(f.name)
			b = append(b, "null"...)
		}
	}
	if r.Purpose != "" {
		key("purpose")
		b = appendPyString(b, r.Purpose)
	} else if verbose {
		key("purpose")
		b = append(b, "null"...)
	}
	key("retries")
	b = strconv.AppendInt(b, int64(r.Retries), 10)
	key("success")
	b = strconv.AppendBool(b, r.Success)
	key("failure")
	b = strconv.AppendBool(b, r.Failure)
	if r.Message != "" {
		key("message")
		b = appendPyString(b, r.Message)
	} else if verbose {
		key("message")
		b = append(b, "null"...)
	}
	if len(r.Subrefs) > 0 {
		key("subrefs")
		b = append(b, '[')
		for i, s := range sortedSubrefs(r.Subrefs) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendPyString(b, s)
		}
		b = append(b, ']')
	} else if verbose {
		key("subrefs")
		b = append(b, "null"...)
	}
	return append(b, '}')
}

// sortedSubrefs sorts as Kopf does at write time (sorted() on str, i.e. by
// code point, which is the byte order of UTF-8), copying only when needed so
// that the caller's slice is never reordered behind its back.
func sortedSubrefs(s []string) []string {
	if slices.IsSorted(s) {
		return s
	}
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// UnmarshalJSON reads a record written by any Kopf version or by kopfgo.
// Unknown keys are ignored, as Kopf ignores them, so that records of newer
// versions still read. Errors wrap ErrCorrupt.
func (r *Record) UnmarshalJSON(data []byte) error {
	rec, err := decodeRecord(data)
	if err != nil {
		return err
	}
	if rec != nil { // null leaves the record as is, as encoding/json does
		*r = *rec
	}
	return nil
}

// decodeRecord returns nil for a JSON null, which Kopf treats as no record.
func decodeRecord[T string | []byte](data T) (*Record, error) {
	if r, ok := decodeFast(data); ok {
		return &r, nil
	}
	return decodeSlow([]byte(data))
}

func decodeSlow(data []byte) (*Record, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%w: not JSON: %v", ErrCorrupt, err)
	}
	switch m := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return recordFromMap(m)
	default:
		return nil, fmt.Errorf("%w: not a JSON object: %.80s", ErrCorrupt, data)
	}
}

// recordFromMap reads a record from its decoded form, which is what the
// status storage holds directly and what annotations hold as JSON. Nulls mean
// absent, as in Kopf's HandlerState.from_storage(); values of a wrong type
// are corrupt rather than silently zeroed, so the user gets told.
func recordFromMap(m map[string]any) (*Record, error) {
	var r Record
	var err error
	if r.Started, err = timeField(m, "started"); err != nil {
		return nil, err
	}
	if r.Stopped, err = timeField(m, "stopped"); err != nil {
		return nil, err
	}
	if r.Delayed, err = timeField(m, "delayed"); err != nil {
		return nil, err
	}
	if r.Purpose, err = stringField(m, "purpose"); err != nil {
		return nil, err
	}
	if r.Message, err = stringField(m, "message"); err != nil {
		return nil, err
	}
	if r.Success, err = boolField(m, "success"); err != nil {
		return nil, err
	}
	if r.Failure, err = boolField(m, "failure"); err != nil {
		return nil, err
	}
	switch v := m["retries"].(type) {
	case nil:
	case float64:
		if v != math.Trunc(v) || v < math.MinInt32 || v > math.MaxInt32 {
			return nil, fieldError("retries", v, "not an integer")
		}
		r.Retries = int(v)
	case int64:
		r.Retries = int(v)
	case int:
		r.Retries = v
	case int32:
		r.Retries = int(v)
	case json.Number:
		n, perr := v.Int64()
		if perr != nil {
			return nil, fieldError("retries", v, "not an integer")
		}
		r.Retries = int(n)
	default:
		return nil, fieldError("retries", v, "not an integer")
	}
	switch v := m["subrefs"].(type) {
	case nil:
	case []any:
		if len(v) > 0 {
			r.Subrefs = make([]string, len(v))
			for i, x := range v {
				s, ok := x.(string)
				if !ok {
					return nil, fieldError("subrefs", v, "not a list of strings")
				}
				r.Subrefs[i] = s
			}
		}
	case []string:
		if len(v) > 0 {
			r.Subrefs = slices.Clone(v)
		}
	default:
		return nil, fieldError("subrefs", v, "not a list of strings")
	}
	return &r, nil
}

func fieldError(name string, v any, why string) error {
	return fmt.Errorf("%w: field %q: %s: %.80v", ErrCorrupt, name, why, v)
}

func timeField(m map[string]any, name string) (*time.Time, error) {
	switch v := m[name].(type) {
	case nil:
		return nil, nil
	case string:
		t, err := conventions.ParseTime(v)
		if err != nil {
			return nil, fmt.Errorf("%w: field %q: %v", ErrCorrupt, name, err)
		}
		return &t, nil
	default:
		return nil, fieldError(name, v, "not a timestamp string")
	}
}

func stringField(m map[string]any, name string) (string, error) {
	switch v := m[name].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	default:
		return "", fieldError(name, v, "not a string")
	}
}

func boolField(m map[string]any, name string) (bool, error) {
	switch v := m[name].(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	default:
		return false, fieldError(name, v, "not a boolean")
	}
}

// statusMap is the record as the status storage writes it: a nested object
// rather than a JSON string, with every field present and None as null. The
// nulls matter there: the record is merged into the existing one, so a
// field that became None must be removed explicitly (Kopf relies on the same
// merge-patch nulls). Numbers are int64 and lists []any so that the value
// survives Kubernetes' unstructured deep copies, which reject other types.
func (r *Record) statusMap() map[string]any {
	m := make(map[string]any, 9)
	for _, f := range [...]struct {
		name string
		t    *time.Time
	}{{"started", r.Started}, {"stopped", r.Stopped}, {"delayed", r.Delayed}} {
		if f.t != nil {
			m[f.name] = conventions.FormatTime(*f.t)
		} else {
			m[f.name] = nil
		}
	}
	m["purpose"] = nilIfEmpty(r.Purpose)
	m["retries"] = int64(r.Retries)
	m["success"] = r.Success
	m["failure"] = r.Failure
	m["message"] = nilIfEmpty(r.Message)
	if len(r.Subrefs) > 0 {
		refs := sortedSubrefs(r.Subrefs)
		l := make([]any, len(refs))
		for i, s := range refs {
			l[i] = s
		}
		m["subrefs"] = l
	} else {
		m["subrefs"] = nil
	}
	return m
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// appendPyString appends s as a JSON string the way Python's json.dumps does
// with its default ensure_ascii=True: everything outside printable ASCII is
// \u-escaped with lowercase hex (astral characters as surrogate pairs), and
// "<", ">", "&" are left alone (Go's encoder would escape them, giving bytes
// that differ from what Kopf writes for the same record).
func appendPyString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	u4 := func(b []byte, r rune) []byte {
		return append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				b = append(b, '\\', '"')
			case '\\':
				b = append(b, '\\', '\\')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = u4(b, rune(c))
			}
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			// Invalid UTF-8 decodes to U+FFFD, which is what Python would
			// hold after decoding such bytes with errors="replace".
			if r >= 0x10000 {
				r -= 0x10000
				b = u4(b, 0xd800|(r>>10)&0x3ff)
				b = u4(b, 0xdc00|r&0x3ff)
			} else {
				b = u4(b, r)
			}
			i += size
		}
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
