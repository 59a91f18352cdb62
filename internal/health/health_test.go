package health

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
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

// A client that opens a connection and never finishes its request is cut
// off after the header timeout, and one that asks for a huge header is
// refused: neither can hold the probe server's resources.
func TestSlowClientsAreCutOff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{
		Endpoint: Endpoint{Addr: ln.Addr().String(), Path: "/healthz"}, Listener: ln,
		Clock: testingclock.NewFakeClock(time.Now()), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Probe:    func(ctx context.Context) (map[string]any, error) { return nil, nil },
		Timeouts: Timeouts{ReadHeader: 50 * time.Millisecond},
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

	slow, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := io.WriteString(slow, "GET /healthz HTTP/1.1\r\nHost: x\r\n"); err != nil { // and never the end
		t.Fatal(err)
	}
	// A failure detector, well under the 10 s default: the configured 50 ms
	// is what must cut the connection.
	slow.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(slow)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the server kept the slow connection open (read %q)", b)
	}

	big, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	go io.WriteString(big, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 64<<10)+"\r\n\r\n")
	big.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(big), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 64 KiB header got %d, want 431", resp.StatusCode)
	}
}

// The server listens where configured only: a loopback endpoint is not
// reachable on the machine's other addresses.
func TestBindsToTheConfiguredHostOnly(t *testing.T) {
	served := make(chan string, 1)
	s := &Server{
		Endpoint: Endpoint{Addr: "127.0.0.1:0", Path: "/healthz"},
		Clock:    testingclock.NewFakeClock(time.Now()),
		Logger:   slog.New(slog.NewTextHandler(lineWriter(served), &slog.HandlerOptions{Level: slog.LevelDebug})),
		Probe:    func(ctx context.Context) (map[string]any, error) { return nil, nil },
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var line string
	select {
	case line = <-served:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(line, " at http://") // "Serving health status at http://..."
	addr, _, _ := strings.Cut(rest, "/")
	if host, _, _ := net.SplitHostPort(addr); host != "127.0.0.1" {
		t.Errorf("served at %q, want 127.0.0.1 only", addr)
	}
}

// lineWriter hands each written log line to ch (dropping it if ch is full).
type lineWriter chan string

func (w lineWriter) Write(p []byte) (int, error) {
	select {
	case w <- string(p):
	default:
	}
	return len(p), nil
}
