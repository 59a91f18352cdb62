package logging

import (
	"bytes"
	"flag"
	"log/slog"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// (compat: logging-levels): client-go's internals show only with --debug, at
// DEBUG, in the operator's format; never in klog's own format on stderr.
func TestInstallKlog(t *testing.T) {
	t.Cleanup(func() {
		klog.ClearLogger()
		var fs flag.FlagSet
		klog.InitFlags(&fs)
		_ = fs.Set("v", "0")
	})
	var buf bytes.Buffer
	l := New(Config{Format: FormatFull, Level: slog.LevelDebug, Writer: &buf})

	InstallKlog(l, true)
	klog.Info("info line")
	klog.V(KlogVerbosity).Info("request line")
	klog.V(KlogVerbosity + 1).Info("too verbose")
	klog.Error("error line")
	klog.Background().V(4).Info("contextual", "k", "v")
	klog.Background().V(KlogVerbosity + 1).Info("contextual too verbose")
	klog.Flush()
	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	want := []string{
		"klog                 [DEBUG   ] info line",
		"klog                 [DEBUG   ] request line",
		"klog                 [ERROR   ] error line",
		"klog                 [DEBUG   ] contextual k=v",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines %q, want %d", len(got), got, len(want))
	}
	for i := range got {
		if !fullHeader.MatchString(got[i]) || !strings.HasSuffix(got[i], want[i]) {
			t.Errorf("line %q, want it to end with %q", got[i], want[i])
		}
	}

	buf.Reset()
	InstallKlog(l, false)
	klog.Info("info line")
	klog.Error("error line")
	klog.Background().Info("contextual")
	klog.Flush()
	if buf.Len() != 0 {
		t.Errorf("without debug, klog wrote %q", buf.String())
	}
}
