package faultproxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
)

// Action is what a rule does to a request it matches.
type Action int

const (
	// Answer responds with Rule.Status and a Status body, never forwarding.
	Answer Action = iota
	// Stall accepts the request and sends nothing until the proxy closes or
	// Rule.Delay passes (then the connection is dropped).
	Stall
	// Drop closes the connection without a response.
	Drop
	// Reset closes the connection with a TCP RST.
	Reset
	// Delay forwards the request after Rule.Delay.
	Delay
	// WatchError answers a watch with 200 and one ERROR event carrying a
	// Status with Rule.Status (410 is how the API server says that the
	// watch's resourceVersion is too old), then ends the stream.
	WatchError
)

func (a Action) String() string {
	return [...]string{"answer", "stall", "drop", "reset", "delay", "watch-error"}[a]
}

// Rule matches requests and says what to do with them. Empty fields match
// anything.
type Rule struct {
	// Method is the HTTP method: GET, POST, PUT, PATCH, DELETE.
	Method string
	// Watch: 1 matches only watch requests, -1 only the others, 0 both.
	Watch int
	// PathContains must occur in the URL path (e.g. "/kopfexamples/",
	// "/status", "/events", "/namespaces/ns1/").
	PathContains string
	// Match, when set, must also hold.
	Match func(*http.Request) bool
	// Action, and Status for Answer and WatchError.
	Action Action
	Status int
	// RetryAfter, for Answer, sends Retry-After: 1 (as the API server does
	// on 429): client-go then retries by itself, unseen by the operator.
	RetryAfter bool
	Delay      time.Duration
	// Times limits how many requests the rule takes (0: no limit).
	Times int

	taken atomic.Int64
}

// Taken is how many requests the rule has acted on.
func (r *Rule) Taken() int { return int(r.taken.Load()) }

func (r *Rule) matches(req *http.Request) bool {
	if r.Method != "" && r.Method != req.Method {
		return false
	}
	watch := req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1"
	if r.Watch > 0 && !watch || r.Watch < 0 && watch {
		return false
	}
	if r.PathContains != "" && !strings.Contains(req.URL.Path, r.PathContains) {
		return false
	}
	if r.Match != nil && !r.Match(req) {
		return false
	}
	return true
}

// take claims one use of the rule; false when it is used up.
func (r *Rule) take() bool {
	n := r.taken.Add(1)
	if r.Times > 0 && n > int64(r.Times) {
		r.taken.Add(-1)
		return false
	}
	return true
}

// Proxy is a running fault-injecting proxy.
type Proxy struct {
	ln     net.Listener
	srv    *http.Server
	rp     *httputil.ReverseProxy
	closed chan struct{}

	mu    sync.Mutex
	rules []*Rule

	forwarded atomic.Int64
	injected  atomic.Int64
	caPEM     []byte
}

// Start proxies to the API server of cfg (its Host and TLS settings; its
// credentials are not used: clients bring their own).
func Start(cfg *rest.Config) (*Proxy, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: API server URL %q: %w", cfg.Host, err)
	}
	tlsCfg, err := rest.TLSConfigFor(&rest.Config{TLSClientConfig: cfg.TLSClientConfig})
	if err != nil {
		return nil, fmt.Errorf("faultproxy: TLS for %s: %w", cfg.Host, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	cert, caPEM, err := selfSigned()
	if err != nil {
		ln.Close()
		return nil, err
	}
	ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
	p := &Proxy{ln: ln, closed: make(chan struct{}), caPEM: caPEM}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport: &http.Transport{
			TLSClientConfig:     tlsCfg,
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 100,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		},
		FlushInterval: -1, // watch streams event by event
		// Resets and drops are what it is for: no complaints about them.
		ErrorLog: log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			// The API server is down or restarting: what a load balancer
			// in front of it answers.
			writeStatus(w, http.StatusBadGateway, "faultproxy: upstream: "+err.Error())
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go p.srv.Serve(ln)
	return p, nil
}

// URL is where clients connect: HTTPS on the loopback interface, with a
// certificate of the proxy's own (see CA).
func (p *Proxy) URL() string { return "https://" + p.ln.Addr().String() }

// CA is the PEM certificate that clients must trust for URL. (TLS, not
// plain HTTP: client-go sends a kubeconfig's credentials over TLS only.)
func (p *Proxy) CA() []byte { return p.caPEM }

// Config is cfg pointed at the proxy, keeping its credentials.
func (p *Proxy) Config(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Host = p.URL()
	c.TLSClientConfig = rest.TLSClientConfig{CAData: p.caPEM}
	return c
}

// Kubeconfig is a kubeconfig for processes of their own (an operator's
// binary) pointed at the proxy: the bearer token, and the namespace of its
// context.
func (p *Proxy) Kubeconfig(token, namespace string) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: faultproxy, cluster: {server: %q, certificate-authority-data: %q}}]
users: [{name: faultproxy, user: {token: %q}}]
contexts: [{name: faultproxy, context: {cluster: faultproxy, user: faultproxy, namespace: %s}}]
current-context: faultproxy
`, p.URL(), base64.StdEncoding.EncodeToString(p.caPEM), token, namespace)
}

// selfSigned makes the proxy's certificate for 127.0.0.1, valid for a day.
func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "faultproxy"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("faultproxy: certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// Add installs a rule (checked in the order added) and returns it.
func (p *Proxy) Add(r *Rule) *Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, r)
	return r
}

// Remove uninstalls a rule.
func (p *Proxy) Remove(r *Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.rules {
		if x == r {
			p.rules = append(p.rules[:i:i], p.rules[i+1:]...)
			return
		}
	}
}

// Clear uninstalls every rule.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = nil
}

// Counts are the requests forwarded and the faults injected so far.
func (p *Proxy) Counts() (forwarded, injected int) {
	return int(p.forwarded.Load()), int(p.injected.Load())
}

// Close stops the proxy and every connection through it.
func (p *Proxy) Close() error {
	select {
	case <-p.closed:
		return nil
	default:
		close(p.closed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	p.srv.Shutdown(ctx)
	return p.srv.Close()
}

func (p *Proxy) rule(req *http.Request) *Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.rules {
		if r.matches(req) && r.take() {
			return r
		}
	}
	return nil
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r := p.rule(req)
	if r == nil {
		p.forwarded.Add(1)
		p.rp.ServeHTTP(w, req)
		return
	}
	p.injected.Add(1)
	switch r.Action {
	case Answer:
		if r.RetryAfter {
			w.Header().Set("Retry-After", "1")
		}
		writeStatus(w, r.Status, fmt.Sprintf("faultproxy: injected %d for %s %s", r.Status, req.Method, req.URL.Path))
	case WatchError:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		json.NewEncoder(w).Encode(map[string]any{"type": "ERROR", "object": status(r.Status, "faultproxy: injected watch error")})
	case Delay:
		select {
		case <-time.After(r.Delay):
		case <-req.Context().Done():
			return
		case <-p.closed:
			return
		}
		p.forwarded.Add(1)
		p.rp.ServeHTTP(w, req)
	case Stall, Drop, Reset:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		switch r.Action {
		case Stall:
			var timeout <-chan time.Time
			if r.Delay > 0 {
				timeout = time.After(r.Delay)
			}
			select {
			case <-p.closed:
			case <-timeout:
			}
		case Reset:
			if tcp, ok := conn.(*net.TCPConn); ok {
				tcp.SetLinger(0) // close sends RST instead of FIN
			}
		}
	}
}

// writeStatus answers as the API server does: a metav1.Status that
// client-go turns into the matching apierrors.StatusError.
func writeStatus(w http.ResponseWriter, code int, msg string) {
	body, _ := json.Marshal(status(code, msg))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(body)
}

func status(code int, msg string) map[string]any {
	reason := map[int]string{
		400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
		409: "Conflict", 410: "Expired", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
		502: "InternalError", 503: "ServiceUnavailable", 504: "Timeout",
	}[code]
	return map[string]any{
		"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": msg, "reason": reason, "code": code,
	}
}
