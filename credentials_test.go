package kopfgo_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/kopfgo/kopfgo"
)

// A login handler's contradictory credentials stop Run with an error that
// names the handler and what to drop, before anything touches a cluster.
func TestRunNamesTheFieldsToDropBesideATransport(t *testing.T) {
	op := kopfgo.New(kopfgo.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	op.On.Login(func(ctx context.Context, a *kopfgo.Activity) (*kopfgo.ConnectionInfo, error) {
		return &kopfgo.ConnectionInfo{Server: "https://127.0.0.1:1", Transport: http.DefaultTransport, Token: "t", CAData: []byte("ca")}, nil
	}, kopfgo.ID("login"))
	err := op.Run(t.Context())
	if err == nil {
		t.Fatal("Run succeeded, want an error about the connection info")
	}
	for _, want := range []string{`"login"`, "Transport and also CAData, Token"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Run = %q, want it to contain %q", err, want)
		}
	}
}
