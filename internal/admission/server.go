package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/health"
)

// ClientConfig is how the API server reaches the webhooks: the webhook
// configurations' clientConfig without the per-handler path.
type ClientConfig struct {
	URL string
	// Service, when set, is used instead of URL (clientConfig.service);
	// Path is the server's root path.
	Service  *config.WebhookService
	Path     string
	CABundle []byte // PEM
}

// Server is the HTTPS webhook server (Kopf's WebhookServer). It serves TLS
// only: a plain-HTTP request gets Go's "client sent an HTTP request to an
// HTTPS server" 400.
type Server struct {
	Config  config.WebhookServer
	Handler http.Handler
	Logger  *slog.Logger
	// Listener, when set, is served instead of listening on the configured
	// address (tests).
	Listener net.Listener
	// Timeouts: zero fields take the liveness server's defaults.
	Timeouts health.Timeouts
	// Service, when set, is how the API server reaches the server: the
	// client config names it, and a generated certificate is made for its
	// DNS names too.
	Service *config.WebhookService

	// GoawayChance is the chance, per request, that the answer moves the
	// client's next requests to a new connection (Admission.GoawayChance,
	// defaults applied); 0 or less: never.
	GoawayChance float64

	// certs, when set and there are no certificate files, keeps the
	// certificates in a Secret (Run sets it from CertSecret).
	certs *keeper
	cert  atomic.Pointer[tls.Certificate]
}

// Run serves until ctx ends, calling configs with the client config at
// start and again whenever the certificate files change. It owns its
// goroutines and returns after they have stopped.
func (s *Server) Run(ctx context.Context, configs func(ClientConfig)) error {
	cfg := s.Config
	ln := s.Listener
	if ln == nil {
		addr := net.JoinHostPort(cfg.Addr, strconv.Itoa(cfg.Port))
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("cannot serve the admission webhooks on %s: %w", addr, err)
		}
	}
	port := ln.Addr().(*net.TCPAddr).Port
	host := cfg.Host
	if host == "" {
		host = accessibleAddr(cfg.Addr)
	}
	ca, files, wait, err := s.loadCerts(ctx, host)
	if err != nil {
		_ = ln.Close()
		return err
	}
	base := buildURL(host, port, cfg.Path)
	publish := func(ca []byte) error {
		if cfg.CADump != "" {
			if err := os.WriteFile(cfg.CADump, ca, 0o644); err != nil {
				return fmt.Errorf("cannot write the CA bundle to %s: %w", cfg.CADump, err)
			}
		}
		configs(ClientConfig{URL: base, Service: s.Service, Path: cfg.Path, CABundle: ca})
		return nil
	}
	if err := publish(ca); err != nil {
		_ = ln.Close()
		return err
	}
	tlsCfg := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.cert.Load(), nil },
		// The API server's client certificate, if it sends one, reaches the
		// handlers as SSLPeer; it is not verified here (Kopf's default).
		ClientAuth: tls.RequestClientCert,
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	switch {
	case files != nil:
		wg.Go(func() { s.watchFiles(ctx, files, publish) })
	case s.certs != nil:
		wg.Go(func() {
			s.certs.run(ctx, wait, func(sv served) {
				// The bundle goes out before the certificate is swapped:
				// the API server must trust a new CA before it is presented.
				if !bytes.Equal(sv.bundle, ca) {
					ca = sv.bundle
					if err := publish(ca); err != nil {
						s.Logger.Error(err.Error())
					}
				}
				s.cert.Store(&sv.cert)
			})
		})
	}
	handler := s.Handler
	if s.GoawayChance > 0 {
		handler = goaway(handler, s.GoawayChance, rand.Float64)
	}
	return health.Serve(ctx, "", tls.NewListener(ln, tlsCfg), handler, s.Timeouts, s.Logger,
		"admission webhook server", "Listening for webhooks at https://%s"+cfg.Path)
}

// goaway asks the client, at chance per request (draw gives a number in
// [0, 1)), to send its next requests over a new connection: the answer's
// "Connection: close" makes net/http close the connection after it. The
// server speaks HTTP/1.1 (its TLS offers no h2), one request at a time per
// connection, so no other request is cut short; over HTTP/2, net/http
// would send a GOAWAY and let the streams in flight finish.
func goaway(h http.Handler, chance float64, draw func() float64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draw() < chance {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// certFiles are the certificate files being watched, with what they held.
type certFiles struct {
	paths []string
	seen  [][]byte
}

// hosts are the names a generated certificate is for: the host, Addr,
// ExtraSANs, and the Service's DNS names, which come first.
func (s *Server) hosts(host string) []string {
	cfg := s.Config
	hosts := append(s.serviceHosts(), host, cfg.Addr)
	hosts = append(hosts, cfg.ExtraSANs...)
	if addr := accessibleAddr(cfg.Addr); addr != host {
		hosts = append(hosts, addr)
	}
	return hosts
}

// serviceHosts are the Service's DNS names, if there is a Service.
func (s *Server) serviceHosts() []string {
	svc := s.Service
	if svc == nil {
		return nil
	}
	return []string{svc.Name, svc.Name + "." + svc.Namespace, svc.Name + "." + svc.Namespace + ".svc",
		svc.Name + "." + svc.Namespace + ".svc.cluster.local"}
}

// loadCerts loads the certificate files, or the certificates of the
// Secret, or generates a self-signed one for the hosts; it returns the CA
// bundle, the files to watch (nil unless files), and when to check the
// Secret again.
func (s *Server) loadCerts(ctx context.Context, host string) ([]byte, *certFiles, time.Duration, error) {
	cfg := s.Config
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, nil, 0, fmt.Errorf("the webhook server needs both CertFile and KeyFile, or neither (to generate a certificate)")
	}
	if cfg.CertFile == "" && s.certs != nil {
		s.certs.policy.hosts, s.certs.policy.need = s.hosts(host), s.serviceHosts()
		if s.Service == nil {
			s.certs.policy.need = s.certs.policy.hosts
		}
		sv, wait, err := s.certs.sync(ctx)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("cannot get the webhook certificates from their Secret: %w", err)
		}
		s.cert.Store(&sv.cert)
		s.Logger.Debug("Using the certificate kept in the Secret for HTTPS.")
		return sv.bundle, nil, wait, nil
	}
	if cfg.CertFile == "" {
		cert, ca, err := selfSigned(s.hosts(host), time.Now())
		if err != nil {
			return nil, nil, 0, err
		}
		s.cert.Store(&cert)
		if cfg.CAFile != "" {
			if ca, err = os.ReadFile(cfg.CAFile); err != nil {
				return nil, nil, 0, fmt.Errorf("cannot read the CA bundle: %w", err)
			}
		}
		s.Logger.Debug("Using a generated self-signed certificate for HTTPS.")
		return ca, nil, 0, nil
	}
	files := &certFiles{paths: []string{cfg.CertFile, cfg.KeyFile}}
	if cfg.CAFile != "" {
		files.paths = append(files.paths, cfg.CAFile)
	}
	ca, err := s.readFiles(files)
	if err != nil {
		return nil, nil, 0, err
	}
	s.Logger.Debug("Using a provided certificate for HTTPS.")
	return ca, files, 0, nil
}

// readFiles reads the certificate files into the server and returns the CA
// bundle: CAFile, or the certificate file itself.
func (s *Server) readFiles(files *certFiles) ([]byte, error) {
	cert, err := tls.LoadX509KeyPair(s.Config.CertFile, s.Config.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("cannot load the webhook server's certificate: %w", err)
	}
	seen := make([][]byte, len(files.paths))
	for i, p := range files.paths {
		if seen[i], err = os.ReadFile(p); err != nil {
			return nil, fmt.Errorf("cannot read %s: %w", p, err)
		}
	}
	s.cert.Store(&cert)
	files.seen = seen
	if s.Config.CAFile != "" {
		return seen[2], nil
	}
	return seen[0], nil
}

// watchFiles reads the certificate files again when their content changes
// (a renewal by cert-manager or a mounted secret's update) and publishes the
// new CA bundle; a half-written pair is retried at the next check.
func (s *Server) watchFiles(ctx context.Context, files *certFiles, publish func([]byte) error) {
	every := s.Config.FileCheckInterval
	if every <= 0 {
		every = 60 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed := false
		for i, p := range files.paths {
			data, err := os.ReadFile(p)
			if err == nil && !bytes.Equal(data, files.seen[i]) {
				changed = true
			}
		}
		if !changed {
			continue
		}
		ca, err := s.readFiles(files)
		if err != nil {
			s.Logger.Warn(fmt.Sprintf("The renewed certificate files cannot be used yet: %v", err))
			continue
		}
		s.Logger.Debug("Serving with the renewed SSL certificate files.")
		if err := publish(ca); err != nil {
			s.Logger.Error(err.Error())
		}
	}
}

// accessibleAddr turns a catch-all listening address into one that can be
// called, as Kopf does: empty → localhost... but as an IP, 127.0.0.1, since
// the certificate and a URL must agree on the same name.
func accessibleAddr(addr string) string {
	switch addr {
	case "", "0.0.0.0":
		return "127.0.0.1"
	case "::", "[::]":
		return "::1"
	}
	return addr
}

func buildURL(host string, port int, path string) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	netloc := host
	if port != 443 {
		netloc = host + ":" + strconv.Itoa(port)
	}
	return (&url.URL{Scheme: "https", Host: netloc, Path: path}).String()
}
