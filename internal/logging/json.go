package logging

import (
	"unicode/utf8"

	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"
)

// jsonEncoder renders the json format as python-json-logger does for Kopf:
//
//	{"message": …, <extra fields>, "timestamp": …, "object": {…}, "severity": …}
//
// zap's JSON encoder accumulates the fields of With, and writes the message
// and the fields of each entry; the timestamp, the object reference and the
// severity are appended after them.
type jsonEncoder struct {
	zapcore.Encoder // zap's JSON encoder, keys for the message only
	cfg             *encoderConfig
}

// The timestamp layout of Kopf's JSON logs: Python's datetime.isoformat()
// of the record time in UTC.
const jsonTimeLayout = "2006-01-02T15:04:05.000000-07:00"

func newJSONEncoder(cfg *encoderConfig) *jsonEncoder {
	return &jsonEncoder{cfg: cfg, Encoder: zapcore.NewJSONEncoder(zapcore.EncoderConfig{
		MessageKey:     "message",
		LineEnding:     "\n",
		EncodeTime:     zapcore.RFC3339NanoTimeEncoder, // of time-valued fields
		EncodeDuration: zapcore.StringDurationEncoder,
	})}
}

func (e *jsonEncoder) Clone() zapcore.Encoder {
	return &jsonEncoder{Encoder: e.Encoder.Clone(), cfg: e.cfg}
}

func (e *jsonEncoder) EncodeEntry(ent zapcore.Entry, fields []zapcore.Field) (*buffer.Buffer, error) {
	ref, fields := takeRef(fields)
	msg := ent.Message
	if ref != nil && e.cfg.prefix {
		msg = ref.prefix() + msg
	}
	buf, err := e.Encoder.EncodeEntry(zapcore.Entry{Message: msg}, fields)
	if err != nil {
		return nil, err
	}
	// Reopen the object: drop its closing "}\n" (copying the bytes onto
	// themselves: no allocation, no move).
	b := buf.Bytes()
	buf.Reset()
	buf.AppendBytes(b[:len(b)-2])

	buf.AppendString(`,"timestamp":"`)
	buf.AppendTime(ent.Time.UTC(), jsonTimeLayout)
	buf.AppendByte('"')
	if ref != nil {
		buf.AppendByte(',')
		appendJSONString(buf, e.cfg.refKey)
		buf.AppendString(`:{"apiVersion":`)
		appendJSONStringOrNull(buf, ref.APIVersion)
		buf.AppendString(`,"kind":`)
		appendJSONStringOrNull(buf, ref.Kind)
		buf.AppendString(`,"name":`)
		appendJSONStringOrNull(buf, ref.Name)
		buf.AppendString(`,"uid":`)
		appendJSONStringOrNull(buf, ref.UID)
		buf.AppendString(`,"namespace":`)
		appendJSONStringOrNull(buf, ref.Namespace)
		buf.AppendByte('}')
	}
	buf.AppendString(`,"severity":"`)
	buf.AppendString(severity(ent.Level))
	buf.AppendByte('"')
	if ent.Stack != "" {
		buf.AppendString(`,"stack_info":`)
		appendJSONString(buf, ent.Stack)
	}
	buf.AppendString("}\n")
	return buf, nil
}

// severity is Kopf's JSON severity of the level.
func severity(l zapcore.Level) string {
	switch {
	case l <= zapcore.DebugLevel:
		return "debug"
	case l == zapcore.InfoLevel:
		return "info"
	case l == zapcore.WarnLevel:
		return "warn"
	case l == zapcore.ErrorLevel:
		return "error"
	}
	return "fatal"
}

// appendJSONStringOrNull writes null for "", as Kopf writes None for the
// namespace of cluster-scoped objects.
func appendJSONStringOrNull(b *buffer.Buffer, s string) {
	if s == "" {
		b.AppendString("null")
		return
	}
	appendJSONString(b, s)
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendJSONString(b *buffer.Buffer, s string) {
	b.AppendByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b.AppendString(s[start:i])
			switch c {
			case '"', '\\':
				b.AppendByte('\\')
				b.AppendByte(c)
			case '\n':
				b.AppendString(`\n`)
			case '\r':
				b.AppendString(`\r`)
			case '\t':
				b.AppendString(`\t`)
			default:
				b.AppendString(`\u00`)
				b.AppendByte(hexDigits[c>>4])
				b.AppendByte(hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.AppendString(s[start:i])
			b.AppendString(`\ufffd`)
			i++
			start = i
			continue
		}
		i += size
	}
	b.AppendString(s[start:])
	b.AppendByte('"')
}
