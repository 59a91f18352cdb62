package kopfgo

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
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

// The clients handlers get from their ctx pass the operator's flow
// control: their failures count towards its idea of the API server's
// health, and in an outage they wait at the same gate.
func TestHandlersClientsPassTheFlowControl(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	r := &run{cfg: cfg, settings: Settings{}.WithDefaults(), clock: clock.RealClock{}, logger: logger, obs: &observability{}}
	r.flow = flowControl(cfg, r.settings, r.clock, logger, r.obs)
	clients := ClientsFrom(r.clients(t.Context()))
	for range 3 {
		if _, err := clients.Kube.CoreV1().ConfigMaps("default").Get(t.Context(), "cm", metav1.GetOptions{}); err == nil {
			t.Fatal("a GET from a server answering 503 succeeded")
		}
	}
	if !r.flow.Stats().Unavailable {
		t.Error("three failed requests of a handler's clients did not reach the flow control")
	}
}
