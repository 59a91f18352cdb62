package logging

import (
	"context"
	"flag"
	"log/slog"
	"strconv"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// KlogVerbosity is klog's -v in debug mode: 6 shows every API request with
// its method, URL, status and latency, which is the "API traffic" of Kopf's
const KlogVerbosity = 6

// KlogName is the logger name of client-go's messages.
const KlogName = "klog"

// InstallKlog routes klog, the logging of client-go and apimachinery, into
// l, so that it never writes to stderr in its own format. In debug mode its
// messages go to l at DEBUG (errors at ERROR) under the name "klog", with
// klog's verbosity at KlogVerbosity; otherwise they are discarded, as Kopf
// hides its low-level internals unless --debug.
//
// klog's configuration is global: call this once, before the API clients
// start (it is not safe to call concurrently with klog's logging).
func InstallKlog(l *slog.Logger, debug bool) {
	var fs flag.FlagSet
	klog.InitFlags(&fs)
	if !debug {
		_ = fs.Set("v", "0")
		klog.SetLoggerWithOptions(logr.Discard(), klog.ContextualLogger(true))
		return
	}
	_ = fs.Set("v", strconv.Itoa(KlogVerbosity))
	h := &klogHandler{inner: Named(l, KlogName).Handler(), min: slog.Level(-KlogVerbosity)}
	klog.SetSlogLogger(slog.New(h))
}

// klogHandler lowers klog's records to DEBUG and applies klog's verbosity
// to the calls that bypass klog's own checks (contextual logging): logr's
// V(n) arrives as slog level -n.
type klogHandler struct {
	inner slog.Handler
	min   slog.Level
}

func klogLevel(l slog.Level) slog.Level {
	if l >= slog.LevelError {
		return slog.LevelError
	}
	return slog.LevelDebug
}

func (h *klogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.inner.Enabled(ctx, klogLevel(l))
}

func (h *klogHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = klogLevel(r.Level)
	return h.inner.Handle(ctx, r)
}

func (h *klogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &klogHandler{inner: h.inner.WithAttrs(attrs), min: h.min}
}

func (h *klogHandler) WithGroup(name string) slog.Handler {
	return &klogHandler{inner: h.inner.WithGroup(name), min: h.min}
}
