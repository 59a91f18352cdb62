package kopfgo

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/internal/logging"
	"github.com/kopfgo/kopfgo/internal/testlog"
)

// Without login handlers, the built-in login runs as Kopf's fallback login
// activity does, with its id and lines, which Kopf's users and its example
// suite count (compat: activities-login-builtin).
func TestBuiltinLoginIsKopfsFallbackActivity(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		kubeconfig string
		wantErr    string
		want       []string
	}{
		{"kubeconfig", kubeconfig, "cannot discover", []string{
			"Initial authentication has been initiated.",
			"Client is configured via kubeconfig file.",
			"Activity 'login_via_client' succeeded.",
			"Initial authentication has finished.",
		}},
		{"none", filepath.Join(dir, "missing"), "cannot load Kubernetes credentials", []string{
			"Initial authentication has been initiated.",
			"Activity 'login_via_client' failed with an exception and will ignore it: cannot load Kubernetes credentials",
			"Initial authentication has failed: no credentials were retrieved from the login handlers.",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out testlog.Buffer
			op := New(Options{
				Kubeconfig: tt.kubeconfig,
				Logger:     logging.New(logging.Config{Format: logging.FormatPlain, Level: slog.LevelDebug, Writer: &out}),
			})
			// Connections to port 1 are refused at once: one quick retry.
			op.opts.Settings.Networking.ErrorBackoffs = []time.Duration{time.Millisecond}
			op.On.Create("kopfexamples", func(context.Context, *Change) (any, error) { return nil, nil }, ID("create"))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a failure detector
			defer cancel()
			err := op.Run(ctx)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Run = %v, want an error with %q", err, tt.wantErr)
			}
			log := out.String()
			at := 0
			for _, line := range tt.want {
				i := strings.Index(log[at:], line)
				if i < 0 {
					t.Fatalf("no %q (in order) in the log:\n%s", line, log)
				}
				at += i + len(line)
			}
		})
	}
}
