package kopfgo

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kopfgo/kopfgo/internal/logging"
	"github.com/kopfgo/kopfgo/internal/testlog"
)

// kopfgo's object logger, as c.Logger is, in Kopf's plain format at INFO.
func objectLogger(buf *testlog.Buffer) *slog.Logger {
	l := logging.New(logging.Config{Format: logging.FormatPlain, Level: slog.LevelInfo, Writer: buf})
	return logging.WithObject(l, logging.ObjectRef{Namespace: "ns", Name: "kex"})
}

// Libraries given c.Logger as a *zap.Logger or a logr.Logger write Kopf's
// lines, with the object's prefix and the operator's level.
func TestZapAndLogrFromTheHandlersLogger(t *testing.T) {
	var buf testlog.Buffer
	l := objectLogger(&buf)
	Zap(l).Info("from zap", zap.String("k", "v"))
	Zap(l).Debug("zap debug is below the level")
	Logr(l).Info("from logr", "n", 1)
	Logr(l).V(1).Info("logr V(1) is below INFO")
	Logr(l).Error(nil, "logr error")
	out := buf.String()
	for _, want := range []string{"[ns/kex] from zap", "[ns/kex] from logr", "[ns/kex] logr error"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "below") {
		t.Errorf("a line below the level was written:\n%s", out)
	}
}

// kopfgo's lines go into the user's zap or logr logger, their names and
// objects as values.
func TestOperatorLogsIntoZapAndLogr(t *testing.T) {
	core, seen := observer.New(zapcore.InfoLevel)
	l := logging.WithObject(logging.Named(FromZap(zap.New(core)), "kopf.activities.startup"), logging.ObjectRef{Namespace: "ns", Name: "kex"})
	l.Info("Handler 'x' succeeded.", "retry", 2)
	l.Debug("below the zap core's level")
	entries := seen.All()
	if len(entries) != 1 || entries[0].Message != "Handler 'x' succeeded." {
		t.Fatalf("entries %+v", entries)
	}
	ctx := entries[0].ContextMap()
	if ctx["logger"] != "kopf.activities.startup" || ctx["retry"] != int64(2) {
		t.Errorf("fields %v", ctx)
	}
	if obj, _ := ctx["object"].(map[string]any); obj["name"] != "kex" || obj["namespace"] != "ns" {
		t.Errorf("object %v", ctx["object"])
	}

	var lines []string
	lr := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	FromLogr(lr).Warn("a warning", "k", "v")
	if len(lines) != 1 || !strings.Contains(lines[0], `"msg"="a warning"`) || !strings.Contains(lines[0], `"k"="v"`) {
		t.Errorf("logr got %q", lines)
	}
}
