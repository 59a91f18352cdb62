package admission

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/kopfgo/kopfgo/internal/config"
)

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// With a GoawayChance of 1, each answer sends the client's next request
// over a new connection: behind a Service, each such connection may reach
// another replica. With the chance off, the client keeps its one
// connection. Each request is answered either way. The server speaks
// HTTP/1.1 only (its TLS offers no h2), as the API server's calls do.
func TestGoawayMovesTheNextRequestToANewConnection(t *testing.T) {
	const requests = 4
	for _, tc := range []struct {
		name   string
		chance float64
		conns  int64
	}{
		{"always", 1, requests},
		{"never", -1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			counted := &countingListener{Listener: ln}
			var served atomic.Int64
			srv := &Server{
				Config:   config.WebhookServer{Addr: "127.0.0.1"},
				Listener: counted, Logger: slog.New(slog.DiscardHandler), GoawayChance: tc.chance,
				Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					served.Add(1)
					_, _ = io.WriteString(w, "{}")
				}),
			}
			cc, pool := serve(t, srv)
			// A client that would take HTTP/2 if offered.
			transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
			defer transport.CloseIdleConnections()
			client := &http.Client{Transport: transport}
			for range requests {
				resp, err := client.Get(cc.URL + "/check")
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || resp.Proto != "HTTP/1.1" {
					t.Fatalf("answered %s over %s", resp.Status, resp.Proto)
				}
			}
			if got := served.Load(); got != requests {
				t.Errorf("%d requests served, want %d", got, requests)
			}
			if got := counted.accepted.Load(); got != tc.conns {
				t.Errorf("%d requests came over %d connections, want %d", requests, got, tc.conns)
			}
		})
	}
}

// The chance is drawn per request: the share of answers that close their
// connection follows it.
func TestGoawayChanceIsPerRequest(t *testing.T) {
	for _, tc := range []struct {
		chance float64
		draws  []float64
		closed int
	}{
		{0.02, []float64{0, 0.01, 0.019, 0.02, 0.5, 0.99}, 3},
		{0.5, []float64{0, 0.49, 0.5, 0.99}, 2},
		{1, []float64{0, 0.5, 0.999}, 3},
	} {
		i, closed := 0, 0
		h := goaway(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), tc.chance, func() float64 { i++; return tc.draws[i-1] })
		for range tc.draws {
			w := &headerOnly{header: http.Header{}}
			h.ServeHTTP(w, &http.Request{})
			if w.header.Get("Connection") == "close" {
				closed++
			}
		}
		if closed != tc.closed {
			t.Errorf("chance %v over draws %v: %d answers closed their connection, want %d", tc.chance, tc.draws, closed, tc.closed)
		}
	}
}

// headerOnly is a ResponseWriter that keeps only the header.
type headerOnly struct{ header http.Header }

func (w *headerOnly) Header() http.Header         { return w.header }
func (w *headerOnly) Write(b []byte) (int, error) { return len(b), nil }
func (w *headerOnly) WriteHeader(int)             {}
