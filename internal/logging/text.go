package logging

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"
)

type encoderConfig struct {
	format Format
	prefix bool
	refKey string
}

var bufferPool = buffer.NewPool()

// textEncoder renders the plain and full formats. As a zapcore.Encoder, it
// accumulates the fields of With as " key=value" text, ready to be copied
// after the message of each entry.
//
// Values are written as log/slog's TextHandler writes them (strings quoted
// only when needed), except that composite values (maps, slices, structs)
// are compact JSON, and objects and groups are flattened into dotted keys.
type textEncoder struct {
	cfg    *encoderConfig
	buf    *buffer.Buffer
	prefix string // "group." for the keys within open namespaces and objects
}

func newTextEncoder(cfg *encoderConfig) *textEncoder {
	return &textEncoder{cfg: cfg, buf: bufferPool.Get()}
}

// The layout of Python's logging asctime, in local time like Python's.
const fullTimeLayout = "2006-01-02 15:04:05,000"

var textEncoderPool = sync.Pool{New: func() any { return &textEncoder{} }}

func (e *textEncoder) Clone() zapcore.Encoder {
	c := &textEncoder{cfg: e.cfg, buf: bufferPool.Get(), prefix: e.prefix}
	c.buf.AppendBytes(e.buf.Bytes())
	return c
}

func (e *textEncoder) EncodeEntry(ent zapcore.Entry, fields []zapcore.Field) (*buffer.Buffer, error) {
	ref, fields := takeRef(fields)
	line := bufferPool.Get()
	if e.cfg.format == FormatFull {
		// [%(asctime)s] %(name)-20.20s [%(levelname)-8.8s] %(message)s
		line.AppendByte('[')
		line.AppendTime(ent.Time.Local(), fullTimeLayout)
		line.AppendString("] ")
		appendPadded(line, ent.LoggerName, 20)
		line.AppendString(" [")
		appendPadded(line, levelName(ent.Level), 8)
		line.AppendString("] ")
	}
	if ref != nil && e.cfg.prefix {
		appendPrefix(line, ref)
	}
	line.AppendString(ent.Message)
	line.AppendBytes(e.buf.Bytes())
	if len(fields) > 0 {
		fe := textEncoderPool.Get().(*textEncoder)
		fe.cfg, fe.buf, fe.prefix = e.cfg, line, e.prefix
		for i := range fields {
			fields[i].AddTo(fe)
		}
		fe.buf, fe.prefix = nil, ""
		textEncoderPool.Put(fe)
	}
	if ent.Stack != "" {
		line.AppendByte('\n')
		line.AppendString(ent.Stack)
	}
	line.AppendByte('\n')
	return line, nil
}

// levelName is Python's name of the level.
func levelName(l zapcore.Level) string {
	switch l {
	case zapcore.DebugLevel:
		return "DEBUG"
	case zapcore.InfoLevel:
		return "INFO"
	case zapcore.WarnLevel:
		return "WARNING"
	case zapcore.ErrorLevel:
		return "ERROR"
	}
	if l < zapcore.DebugLevel {
		return "DEBUG"
	}
	return "CRITICAL"
}

// appendPadded appends s truncated or padded with spaces to n characters,
// as Python's "%-n.ns".
func appendPadded(b *buffer.Buffer, s string, n int) {
	count := 0
	for i := range s {
		if count == n {
			b.AppendString(s[:i])
			return
		}
		count++
	}
	b.AppendString(s)
	for ; count < n; count++ {
		b.AppendByte(' ')
	}
}

func appendPrefix(b *buffer.Buffer, ref *ObjectRef) {
	b.AppendByte('[')
	if ref.Namespace != "" {
		b.AppendString(ref.Namespace)
		b.AppendByte('/')
	}
	b.AppendString(ref.Name)
	b.AppendString("] ")
}

// addKey writes " key=".
func (e *textEncoder) addKey(key string) {
	e.buf.AppendByte(' ')
	if e.prefix == "" {
		appendText(e.buf, key)
	} else {
		appendText(e.buf, e.prefix+key)
	}
	e.buf.AppendByte('=')
}

// appendText writes s, quoted if it is empty or has spaces, quotes, '=' or
// unprintable characters, as log/slog's TextHandler does.
func appendText(b *buffer.Buffer, s string) {
	if needsQuoting(s) {
		b.AppendBytes(strconv.AppendQuote(b.Bytes()[b.Len():], s))
		return
	}
	b.AppendString(s)
}

func needsQuoting(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= ' ' || c == '=' || c == '"' || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

func (e *textEncoder) AddArray(key string, arr zapcore.ArrayMarshaler) error {
	m := zapcore.NewMapObjectEncoder()
	err := m.AddArray(key, arr)
	e.addJSON(key, m.Fields[key])
	return err
}

// AddObject flattens the object into "key.field=value" pairs.
func (e *textEncoder) AddObject(key string, obj zapcore.ObjectMarshaler) error {
	saved := e.prefix
	e.prefix = saved + key + "."
	err := obj.MarshalLogObject(e)
	e.prefix = saved
	return err
}

func (e *textEncoder) AddBinary(key string, v []byte) {
	e.addKey(key)
	e.buf.AppendString(base64.StdEncoding.EncodeToString(v))
}

func (e *textEncoder) AddByteString(key string, v []byte) {
	e.addKey(key)
	appendText(e.buf, string(v))
}

func (e *textEncoder) AddBool(key string, v bool) {
	e.addKey(key)
	e.buf.AppendBool(v)
}

func (e *textEncoder) AddComplex128(key string, v complex128) {
	e.addKey(key)
	e.buf.AppendString(strconv.FormatComplex(v, 'g', -1, 128))
}

func (e *textEncoder) AddComplex64(key string, v complex64) {
	e.addKey(key)
	e.buf.AppendString(strconv.FormatComplex(complex128(v), 'g', -1, 64))
}

func (e *textEncoder) AddDuration(key string, v time.Duration) {
	e.addKey(key)
	e.buf.AppendString(v.String())
}

func (e *textEncoder) AddFloat64(key string, v float64) { e.addFloat(key, v, 64) }
func (e *textEncoder) AddFloat32(key string, v float32) { e.addFloat(key, float64(v), 32) }

func (e *textEncoder) addFloat(key string, v float64, bits int) {
	e.addKey(key)
	switch {
	case math.IsNaN(v):
		e.buf.AppendString("NaN")
	case math.IsInf(v, 1):
		e.buf.AppendString("+Inf")
	case math.IsInf(v, -1):
		e.buf.AppendString("-Inf")
	default:
		e.buf.AppendFloat(v, bits)
	}
}

func (e *textEncoder) AddInt(key string, v int)     { e.AddInt64(key, int64(v)) }
func (e *textEncoder) AddInt32(key string, v int32) { e.AddInt64(key, int64(v)) }
func (e *textEncoder) AddInt16(key string, v int16) { e.AddInt64(key, int64(v)) }
func (e *textEncoder) AddInt8(key string, v int8)   { e.AddInt64(key, int64(v)) }

func (e *textEncoder) AddInt64(key string, v int64) {
	e.addKey(key)
	e.buf.AppendInt(v)
}

func (e *textEncoder) AddString(key, v string) {
	e.addKey(key)
	appendText(e.buf, v)
}

func (e *textEncoder) AddTime(key string, v time.Time) {
	e.addKey(key)
	e.buf.AppendTime(v, time.RFC3339Nano)
}

func (e *textEncoder) AddUint(key string, v uint)       { e.AddUint64(key, uint64(v)) }
func (e *textEncoder) AddUint32(key string, v uint32)   { e.AddUint64(key, uint64(v)) }
func (e *textEncoder) AddUint16(key string, v uint16)   { e.AddUint64(key, uint64(v)) }
func (e *textEncoder) AddUint8(key string, v uint8)     { e.AddUint64(key, uint64(v)) }
func (e *textEncoder) AddUintptr(key string, v uintptr) { e.AddUint64(key, uint64(v)) }

func (e *textEncoder) AddUint64(key string, v uint64) {
	e.addKey(key)
	e.buf.AppendUint(v)
}

// AddReflected writes v as compact JSON; a value that is a JSON string
// (e.g. a named string type) is written as text, and a value that JSON
// cannot encode as fmt's %+v.
func (e *textEncoder) AddReflected(key string, v any) error {
	e.addJSON(key, v)
	return nil
}

func (e *textEncoder) OpenNamespace(key string) { e.prefix += key + "." }

var jsonBufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (e *textEncoder) addJSON(key string, v any) {
	e.addKey(key)
	jb := jsonBufPool.Get().(*bytes.Buffer)
	defer func() { jb.Reset(); jsonBufPool.Put(jb) }()
	enc := json.NewEncoder(jb)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		appendText(e.buf, fmt.Sprintf("%+v", v))
		return
	}
	out := bytes.TrimRight(jb.Bytes(), "\n")
	if len(out) > 0 && out[0] == '"' {
		var s string
		if json.Unmarshal(out, &s) == nil {
			appendText(e.buf, s)
			return
		}
	}
	e.buf.AppendBytes(out)
}
