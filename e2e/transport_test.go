//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/cluster"
)

// seenRequest is what a login's own transport got from kopfgo.
type seenRequest struct {
	method, query, userAgent, authorization, custom string
}

// customHeaders is a login handler's own transport: it authenticates by
// itself and adds X-Custom-Header; below it, a recorder sees what goes out.
type customHeaders struct {
	token string
	next  http.RoundTripper
	mu    sync.Mutex
	seen  []seenRequest
}

func (c *customHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	incoming := r.Header.Get("Authorization")
	r.Header.Set("X-Custom-Header", "helloworld")
	r.Header.Set("Authorization", "Bearer "+c.token)
	c.mu.Lock()
	c.seen = append(c.seen, seenRequest{r.Method, r.URL.RawQuery, r.Header.Get("User-Agent"), incoming, r.Header.Get("X-Custom-Header")})
	c.mu.Unlock()
	return c.next.RoundTrip(r)
}

func (c *customHeaders) requests() []seenRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seen)
}

func trustingTransport(t *testing.T, ca []byte) *http.Transport {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("no CA certificates in the shared cluster's config")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// (compat: activities-session): a login handler's Transport carries the
// requests as they are: kopfgo adds no Authorization, only its User-Agent, and
// the transport's own headers reach the watch and the patches.
func TestLoginTransportOfItsOwn(t *testing.T) {
	ns := namespace(t)
	shared := cluster.Shared(t)
	custom := &customHeaders{token: shared.Token, next: trustingTransport(t, shared.RESTConfig().CAData)}
	var creates countingCreate
	embedded(t, ns, func(op *kopfgo.Operator) {
		op.On.Login(func(ctx context.Context, a *kopfgo.Activity) (*kopfgo.ConnectionInfo, error) {
			return &kopfgo.ConnectionInfo{Server: shared.APIServerURL, Transport: custom}, nil
		}, kopfgo.ID("login"))
		op.On.Create("kopfexamples", creates.fn, kopfgo.ID("create"))
	})
	obj := createKex(t, ns, objYAML(t))
	waitKex(t, ns, obj.GetName(), "handled through the login's transport", handled)

	var watches, patches int
	for _, r := range custom.requests() {
		if r.authorization != "" || !strings.HasPrefix(r.userAgent, "kopfgo") {
			t.Errorf("%s %s came with Authorization %q and User-Agent %q; want none and kopfgo's", r.method, r.query, r.authorization, r.userAgent)
		}
		switch {
		case r.method == http.MethodGet && strings.Contains(r.query, "watch=true"):
			watches++
		case r.method == http.MethodPatch:
			patches++
		}
	}
	if watches == 0 || patches == 0 {
		t.Errorf("the login's transport carried %d watches and %d patches; want both", watches, patches)
	}
}

// connectProxy is an HTTP CONNECT proxy that records what it is asked for.
type connectProxy struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	asked []string
	conns []net.Conn
}

func newConnectProxy(t *testing.T) *connectProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &connectProxy{ln: ln}
	p.wg.Go(func() { serveConns(ln, p.track, p.handle) })
	t.Cleanup(p.close)
	return p
}

func (p *connectProxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *connectProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.asked)
}

func (p *connectProxy) track(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, c)
}

func (p *connectProxy) handle(c net.Conn) {
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.asked = append(p.asked, req.Method+" "+req.Host)
	p.mu.Unlock()
	if req.Method != http.MethodConnect {
		io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
		return
	}
	up, err := net.Dial("tcp", req.Host)
	if err != nil {
		io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	p.track(up)
	io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	splice(c, br, up)
}

func (p *connectProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// serveConns accepts until ln closes, handling each connection in its own
// goroutine, which closes it when done; serveConns returns after them all.
func serveConns(ln net.Listener, track func(net.Conn), handle func(net.Conn)) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		track(c)
		wg.Go(func() {
			defer c.Close()
			handle(c)
		})
	}
}

// splice copies both ways until either side ends.
func splice(c net.Conn, fromC io.Reader, up net.Conn) {
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, fromC); done <- struct{}{} }()
	go func() { io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	<-done
}

// forwarder makes the API server reachable at a local address that is not a
// loopback one, so that proxy settings from the environment would apply to
// it (Go never proxies loopback addresses), with the server's certificate
// still valid there.
func forwarder(t *testing.T, shared *cluster.Cluster) string {
	ip := certifiedLocalIP(t, shared.RESTConfig().CAData)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	target := strings.TrimPrefix(shared.APIServerURL, "https://")
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		conns = append(conns, c)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		serveConns(ln, track, func(c net.Conn) {
			up, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			track(up)
			splice(c, c, up)
		})
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "https://" + ln.Addr().String()
}

// certifiedLocalIP is a non-loopback address of this machine that the API
// server's certificate is valid for (the apiserver puts its host's address
// there).
func certifiedLocalIP(t *testing.T, chain []byte) string {
	block, _ := pem.Decode(chain)
	if block == nil {
		t.Fatal("no certificate in the shared cluster's CA data")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range cert.IPAddresses {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) && !ip.IsLoopback() {
				return ip.String()
			}
		}
	}
	t.Skip("the API server's certificate names no non-loopback address of this machine")
	return ""
}

// (compat: activities-proxy): an explicit ProxyURL, and the environment's proxy only when
// trusted (per credentials or operator-wide); otherwise HTTPS_PROXY is
// ignored. The operator handles the object in every case.
func TestLoginProxy(t *testing.T) {
	shared := cluster.Shared(t)
	server := forwarder(t, shared)
	host := strings.TrimPrefix(server, "https://")
	tests := []struct {
		name        string
		env         bool // HTTPS_PROXY points at the proxy
		proxyURL    bool
		trustInfo   bool // ConnectionInfo.TrustEnv
		trustGlobal bool // Settings.Networking.TrustEnv
		proxied     bool
	}{
		{name: "ProxyURL", proxyURL: true, proxied: true},
		{name: "environment ignored", env: true},
		{name: "environment trusted by the credentials", env: true, trustInfo: true, proxied: true},
		{name: "environment trusted by the settings", env: true, trustGlobal: true, proxied: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy := newConnectProxy(t)
			if tt.env {
				t.Setenv("HTTPS_PROXY", proxy.URL())
				t.Setenv("NO_PROXY", "")
			}
			ns := namespace(t)
			var settings kopfgo.Settings
			settings.Networking.TrustEnv = tt.trustGlobal
			var creates countingCreate
			embeddedWith(t, kopfgo.Options{Namespaces: []string{ns}, Settings: settings}, func(op *kopfgo.Operator) {
				op.On.Login(func(ctx context.Context, a *kopfgo.Activity) (*kopfgo.ConnectionInfo, error) {
					info := &kopfgo.ConnectionInfo{Server: server, CAData: shared.RESTConfig().CAData, Token: shared.Token, TrustEnv: tt.trustInfo}
					if tt.proxyURL {
						info.ProxyURL = proxy.URL()
					}
					return info, nil
				}, kopfgo.ID("login"))
				op.On.Create("kopfexamples", creates.fn, kopfgo.ID("create"))
			})
			obj := createKex(t, ns, objYAML(t))
			waitKex(t, ns, obj.GetName(), "handled", handled)
			asked := proxy.requests()
			if !tt.proxied {
				if len(asked) != 0 {
					t.Errorf("the proxy was asked %q; want nothing", asked)
				}
				return
			}
			want := "CONNECT " + host
			if len(asked) == 0 || slices.ContainsFunc(asked, func(s string) bool { return s != want }) {
				t.Errorf("the proxy was asked %q; want only %q", asked, want)
			}
		})
	}
}
