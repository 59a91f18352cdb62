package logging

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"go.uber.org/zap/zapcore"
)

// Format is a log format, as given to --log-format.
type Format string

// The log formats of Kopf.
const (
	// FormatPlain writes the message only (with the object prefix).
	FormatPlain Format = "plain"
	// FormatFull writes "[2019-11-04 17:49:25,365] kopf.objects         [INFO    ] message".
	FormatFull Format = "full"
	// FormatJSON writes one JSON object per line.
	FormatJSON Format = "json"
)

// Formats lists the formats in the order shown to users.
var Formats = []Format{FormatPlain, FormatFull, FormatJSON}

// ParseFormat parses a format name, case-insensitively; "" is FormatFull.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case "":
		return FormatFull, nil
	case FormatPlain, FormatFull, FormatJSON:
		return f, nil
	}
	return "", fmt.Errorf("invalid log format %q: use plain, full or json", s)
}

// DefaultRefKey is the JSON key of the object reference, as in Kopf.
const DefaultRefKey = "object"

// DefaultName is the name of the logger New returns, shown in the full
// format's name column. Kopf's loggers are all named "kopf.…".
const DefaultName = "kopf"

// ObjectsName is the name of object-related loggers (WithObject), as in Kopf.
const ObjectsName = "kopf.objects"

// Config configures New. The zero value is Kopf's default: the full format
// at INFO on stderr.
type Config struct {
	// Format is the log format; "" is FormatFull. An unknown format is
	// treated as FormatFull (validate user input with ParseFormat).
	Format Format
	// Level is the minimum level written: slog.LevelInfo by default,
	// slog.LevelDebug for -v/-d, slog.LevelWarn for -q.
	Level slog.Level
	// Prefix enables the "[namespace/name] " prefix of object-related
	// messages. Nil: on for plain and full, off for json (which carries the
	// reference under RefKey instead).
	Prefix *bool
	// RefKey is the JSON key of the object reference; "" is "object".
	RefKey string
	// Writer receives the lines, one Write per line; nil is os.Stderr.
	// Writes are serialised, so any writer will do.
	Writer io.Writer
	// Name is the logger name shown in the full format; "" is "kopf".
	Name string
}

// ObjectRef identifies the object an object-related logger is about; the
// JSON format writes it under the refkey with these field names.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Namespace  string `json:"namespace"` // "" for cluster-scoped objects
}

// New returns a logger writing in the configured format. It is safe for
// concurrent use, as are all the loggers derived from it.
func New(cfg Config) *slog.Logger { return slog.New(NewHandler(cfg)) }

// NewHandler returns the slog.Handler behind New.
func NewHandler(cfg Config) slog.Handler {
	format, err := ParseFormat(string(cfg.Format))
	if err != nil {
		format = FormatFull
	}
	ec := &encoderConfig{format: format, refKey: cfg.RefKey}
	if ec.refKey == "" {
		ec.refKey = DefaultRefKey
	}
	if cfg.Prefix != nil {
		ec.prefix = *cfg.Prefix
	} else {
		ec.prefix = format != FormatJSON
	}
	w := cfg.Writer
	if w == nil {
		w = os.Stderr
	}
	var enc zapcore.Encoder
	if format == FormatJSON {
		enc = newJSONEncoder(ec)
	} else {
		enc = newTextEncoder(ec)
	}
	name := cfg.Name
	if name == "" {
		name = DefaultName
	}
	// The core's own level is the lowest: the handler filters by cfg.Level,
	// which is finer than zap's levels.
	core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), zapcore.DebugLevel)
	return &handler{core: core, level: cfg.Level, name: name}
}

// WithObject returns a logger for messages about one object: named
// "kopf.objects", prefixed with "[namespace/name] " ("[name] " for
// cluster-scoped objects) in the text formats, and carrying ref under the
// refkey in JSON. It is cheap: one small copy per call, no encoding.
//
// A logger not made by New gets the reference as an "object" group of
// attributes instead.
func WithObject(l *slog.Logger, ref ObjectRef) *slog.Logger {
	return slog.New(withObject(l.Handler(), ref))
}

func withObject(h slog.Handler, ref ObjectRef) slog.Handler {
	switch h := h.(type) {
	case *handler:
		c := *h
		c.ref, c.hasRef = ref, true
		c.name = ObjectsName
		return &c
	case *filtered:
		c := *h
		c.inner = withObject(h.inner, ref)
		c.name = ObjectsName
		return &c
	}
	return h.WithAttrs([]slog.Attr{slog.Group(DefaultRefKey,
		"apiVersion", ref.APIVersion, "kind", ref.Kind, "name", ref.Name,
		"uid", ref.UID, "namespace", ref.Namespace)})
}

// Named returns a logger with this name in the full format's 20-character
// name column (e.g. "kopf.reactor.queueing"). The name replaces the
// previous one; it is not appended to it. A logger not made by New gets a
// "logger" attribute instead.
func Named(l *slog.Logger, name string) *slog.Logger { return slog.New(named(l.Handler(), name)) }

func named(h slog.Handler, name string) slog.Handler {
	switch h := h.(type) {
	case *handler:
		c := *h
		c.name = name
		return &c
	case *filtered:
		c := *h
		c.inner = named(h.inner, name)
		c.name = name
		return &c
	}
	return h.WithAttrs([]slog.Attr{slog.String("logger", name)})
}

// prefix returns "[namespace/name] " or "[name] ".
func (r *ObjectRef) prefix() string {
	if r.Namespace != "" {
		return "[" + r.Namespace + "/" + r.Name + "] "
	}
	return "[" + r.Name + "] "
}
