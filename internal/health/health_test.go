package health

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"
	testingclock "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseEndpoint(t *testing.T) {
	tests := []struct {
		in   string
		want Endpoint
		ok   bool
	}{
		{"http://0.0.0.0:8080/healthz", Endpoint{"0.0.0.0:8080", "/healthz"}, true},
		{"http://:8080/healthz", Endpoint{"localhost:8080", "/healthz"}, true},
		{"http://example", Endpoint{"example:80", "/"}, true},
		{"https://0.0.0.0:8080/healthz", Endpoint{}, false},
		{"0.0.0.0:8080", Endpoint{}, false},
	}
	for _, tt := range tests {
		got, err := ParseEndpoint(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseEndpoint(%q) = %+v, %v", tt.in, got, err)
		}
	}
}

func TestServesCachedProbeResultsAndFailures(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	runs := 0
	fail := false
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/healthz"
	s := &Server{
		Endpoint: Endpoint{Addr: ln.Addr().String(), Path: "/healthz"}, Listener: ln,
		Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Probe: func(ctx context.Context) (map[string]any, error) {
			runs++
			if fail {
				return nil, errors.New("stuck")
			}
			return map[string]any{"runs": runs}, nil
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	get := func() (int, string) {
		t.Helper()
		resp, err := http.Get(url) // the listener is open: no waiting
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(); code != 200 || body != `{"runs":1}` {
		t.Errorf("first GET = %d %s", code, body)
	}
	if code, body := get(); code != 200 || body != `{"runs":1}` {
		t.Errorf("cached GET = %d %s", code, body)
	}
	clk.Step(CacheFor)
	fail = true
	if code, body := get(); code != 500 || body != `{"error":"stuck","results":{}}` {
		t.Errorf("failing GET = %d %s", code, body)
	}
}
