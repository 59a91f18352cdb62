package kopfgo

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// A component's failure stops the components started before it, servers
// included, and runs the cleanup handlers: Run returns the error, naming
// the component, rather than waiting for ctx with the liveness endpoint
// still serving.
func TestRunStopsEveryComponentOnOnesError(t *testing.T) {
	op := New(Options{
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		RESTConfig:     &rest.Config{Host: "http://127.0.0.1:1"}, // never called
		Liveness:       "http://127.0.0.1:0/healthz",
		LeaderElection: LeaderElection{Enabled: true},
		Sharding:       Sharding{Shards: 2},
	})
	cleaned := false
	op.On.Cleanup(func(ctx context.Context, a *Activity) error {
		cleaned = RESTConfig(ctx) != nil
		return nil
	}, ID("cleanup"))
	err := op.Run(t.Context())
	if !errors.Is(err, ErrModes) || !strings.HasPrefix(err.Error(), "replica modes: ") {
		t.Fatalf("Run: %v, want ErrModes from the replica modes", err)
	}
	if !cleaned {
		t.Error("the cleanup handler did not run with the credentials")
	}
	if ok, why := op.Ready(); ok || why != "the operator is not running" {
		t.Errorf("after Run: Ready() = %v, %q; want not running", ok, why)
	}
}
