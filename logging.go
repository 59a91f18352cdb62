package kopfgo

import (
	"log/slog"

	"github.com/go-logr/logr"
	"go.uber.org/zap"

	"github.com/kopfgo/kopfgo/internal/logging"
)

// Logging interop. kopfgo logs through log/slog: Options.Logger takes a
// *slog.Logger, and handlers get one as c.Logger. These convert both ways
// between it and the loggers of the Go ecosystem, so that kopfgo's lines go
// into your logr or zap logger, and libraries that want a logr.Logger or a
// *zap.Logger log through kopfgo's (in Kopf's formats when kopfgo owns the
// output, i.e. Options.Logger is nil or made by kopfgo).
//
// Into your logger, kopfgo's logger names (kopf.objects,
// kopf.activities.…) arrive as a "logger" value and an object's identity
// as an "object" group, since your format has no column for them.

// FromLogr returns a *slog.Logger writing into l, for Options.Logger: e.g.
// controller-runtime's or klog's logr.Logger.
func FromLogr(l logr.Logger) *slog.Logger { return slog.New(logr.ToSlogHandler(l)) }

// Logr returns l as a logr.Logger, for libraries that take one:
// kopfgo.Logr(c.Logger) keeps the object's prefix and kopfgo's format.
// logr's V(n) logs at slog level -n: V(1) and above show when the operator
// logs at DEBUG (--verbose).
func Logr(l *slog.Logger) logr.Logger { return logr.FromSlogHandler(l.Handler()) }

// FromZap returns a *slog.Logger writing into z's core, with z's encoder,
// level and fields, for Options.Logger.
func FromZap(z *zap.Logger) *slog.Logger { return slog.New(logging.FromZapCore(z.Core())) }

// Zap returns l as a *zap.Logger, for libraries that take one:
// kopfgo.Zap(c.Logger) keeps the object's prefix and kopfgo's format. zap's
// fields become slog attributes.
func Zap(l *slog.Logger) *zap.Logger { return zap.New(logging.ToZapCore(l.Handler())) }
