package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// CacheFor is how long probe results are reused (Kopf: 10 seconds).
const CacheFor = 10 * time.Second

// Endpoint is a parsed --liveness URL.
type Endpoint struct {
	Addr string // host:port
	Path string
}

// ParseEndpoint reads a liveness URL as Kopf does: only http://; the host
// defaults to localhost and the port to 80.
func ParseEndpoint(raw string) (Endpoint, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Endpoint{}, fmt.Errorf("invalid liveness URL %q: %w", raw, err)
	}
	if u.Scheme != "http" {
		return Endpoint{}, fmt.Errorf("invalid liveness URL %q: only http:// is supported, e.g. http://0.0.0.0:8080/healthz", raw)
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "localhost"
	}
	if port == "" {
		port = "80"
	}
	path := u.Path
	if path == "" {
		path = "/"
	}
	return Endpoint{Addr: net.JoinHostPort(host, port), Path: path}, nil
}

// Server answers liveness probes.
type Server struct {
	Endpoint Endpoint
	// Probe runs the probe handlers and returns their results by id.
	Probe  func(ctx context.Context) (map[string]any, error)
	Clock  clock.PassiveClock
	Logger *slog.Logger
	// Listener, when set, is served instead of listening on Endpoint.Addr
	// (tests open it first, so that they never wait for the port).
	Listener net.Listener
	// Timeouts against slow or stuck clients; zero fields take the
	// defaults (DefaultTimeouts).
	Timeouts Timeouts
	// Extra handlers by path, e.g. /readyz and /metrics.
	Extra map[string]http.Handler

	mu      sync.Mutex // serialises probe runs: at most one in flight
	cached  []byte
	status  int
	expires time.Time
}

// Timeouts bound what one client can hold of the server: a probe port is
// often reachable from the whole cluster network, and a client that opens
// connections and sends nothing (or reads nothing) must not pile them up.
type Timeouts struct {
	// ReadHeader bounds the request line and headers (slowloris).
	ReadHeader time.Duration
	// Read bounds the whole request; Write, from the end of the headers to
	// the end of the answer, which includes the probe handlers' run.
	Read, Write time.Duration
	// Idle bounds a kept-alive connection between requests.
	Idle time.Duration
}

// DefaultTimeouts are generous for probes (kubelet's own timeout is 1 s by
// default) and short for anyone holding connections open.
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: 15 * time.Second, Write: 60 * time.Second, Idle: 60 * time.Second}

func (t Timeouts) withDefaults() Timeouts {
	d := DefaultTimeouts
	if t.ReadHeader > 0 {
		d.ReadHeader = t.ReadHeader
	}
	if t.Read > 0 {
		d.Read = t.Read
	}
	if t.Write > 0 {
		d.Write = t.Write
	}
	if t.Idle > 0 {
		d.Idle = t.Idle
	}
	return d
}

// maxHeaderBytes: a probe's request is a few hundred bytes.
const maxHeaderBytes = 16 << 10

// Run serves until ctx ends. The listener is opened before Run returns an
// error for it, so a port conflict is reported at once.
func (s *Server) Run(ctx context.Context) error {
	mux := http.NewServeMux()
	mux.HandleFunc(s.Endpoint.Path, s.serve)
	for path, h := range s.Extra {
		if path != s.Endpoint.Path {
			mux.Handle(path, h)
		}
	}
	return Serve(ctx, s.Endpoint.Addr, s.Listener, mux, s.Timeouts, s.Logger, "liveness endpoint", "Serving health status at http://%s"+s.Endpoint.Path)
}

// Serve serves h on addr (or on ln, if given) until ctx ends, with the
// timeouts (zero fields: DefaultTimeouts); what names it in errors, line (a
// format of the address) is logged when it serves. The listener is opened
// before Serve returns an error for it, so a port conflict is reported at
// once.
func Serve(ctx context.Context, addr string, ln net.Listener, h http.Handler, timeouts Timeouts, logger *slog.Logger, what, line string) error {
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("cannot serve the %s on %s: %w", what, addr, err)
		}
	}
	to := timeouts.withDefaults()
	srv := &http.Server{
		Handler: h, ReadHeaderTimeout: to.ReadHeader, ReadTimeout: to.Read, WriteTimeout: to.Write,
		IdleTimeout: to.Idle, MaxHeaderBytes: maxHeaderBytes,
		// The server's own complaints (a TLS handshake from a plain-HTTP
		// client, a client gone mid-answer) go to the operator's log at
		// DEBUG, not to stderr past the log's format.
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	logger.Debug(fmt.Sprintf(line, ln.Addr()))
	err := srv.Serve(ln)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "use GET", http.StatusMethodNotAllowed)
		return
	}
	body, status := s.results(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (s *Server) results(ctx context.Context) ([]byte, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Clock.Now()
	if s.cached != nil && now.Before(s.expires) {
		return s.cached, s.status
	}
	results, err := s.Probe(ctx)
	status := http.StatusOK
	if results == nil {
		results = map[string]any{}
	}
	var body []byte
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(map[string]any{"error": err.Error(), "results": results})
	} else if body, err = json.Marshal(results); err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(map[string]any{"error": fmt.Sprintf("probe results are not JSON: %v", err)})
	}
	s.cached, s.status, s.expires = body, status, now.Add(CacheFor)
	return body, status
}
