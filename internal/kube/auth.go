package kube

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpproxy"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// ConnectionInfo is what a login handler returns: where the API is and how
// to authenticate there (Kopf's ConnectionInfo). Set either a path or the
// data of each TLS item, not both.
//
// The operator's connections are set up once, from the first credentials
// of the first login: Server, the TLS settings, ProxyURL and TrustEnv of
// later credentials are not applied (only their Authorization, or their
// Transport, is, request by request).
type ConnectionInfo struct {
	Server           string // https://host:port
	CAPath           string
	CAData           []byte
	Insecure         bool // skip TLS verification
	Username         string
	Password         string
	Scheme           string // Authorization scheme; default "Bearer" with a token
	Token            string
	CertificatePath  string
	CertificateData  []byte
	PrivateKeyPath   string
	PrivateKeyData   []byte
	DefaultNamespace string
	// Priority: the vault uses the highest priority first, randomly within
	// one priority (as Kopf's source does).
	Priority int
	// Expiration, if set, drops the credentials when it passes; the login
	// handlers then run again before the next request.
	Expiration time.Time

	// ProxyURL is an http:// or https:// proxy for the API requests (not
	// SOCKS). It overrides the environment's proxy settings.
	ProxyURL string
	// TrustEnv honours HTTPS_PROXY, HTTP_PROXY and NO_PROXY for these
	// credentials, as Settings.Networking.TrustEnv does for all of them;
	// without either, the environment is ignored (as in Kopf).
	TrustEnv bool

	// Transport, if set, sends the requests made with these credentials
	// (Kopf's AiohttpSession): it does TLS, authentication and proxying
	// itself, so the fields for those must stay empty, and kopfgo only sets
	// the User-Agent. A 401 through it drops these credentials and runs the login handlers again, as for any others. The
	// same transport (pointer) handed back after a 401 is ignored. kopfgo
	// does not close its connections.
	Transport http.RoundTripper
}

// Validate reports contradictory settings.
func (c *ConnectionInfo) Validate() error {
	switch {
	case c.Server == "":
		return errors.New("the connection info has no Server")
	case c.CAPath != "" && len(c.CAData) > 0:
		return errors.New("the connection info has both CAPath and CAData: set one")
	case c.CertificatePath != "" && len(c.CertificateData) > 0:
		return errors.New("the connection info has both CertificatePath and CertificateData: set one")
	case c.PrivateKeyPath != "" && len(c.PrivateKeyData) > 0:
		return errors.New("the connection info has both PrivateKeyPath and PrivateKeyData: set one")
	}
	if c.Transport != nil {
		if set := c.ownedByTransport(); len(set) > 0 {
			return fmt.Errorf("the connection info has a Transport and also %s: the transport does its own TLS, authentication and proxying, so drop them (or drop the Transport)", strings.Join(set, ", "))
		}
	}
	if c.ProxyURL != "" {
		u, err := url.Parse(c.ProxyURL)
		if err != nil {
			return fmt.Errorf("the connection info's ProxyURL is not a URL: %w", err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("the connection info's ProxyURL %q is not supported: use http://host:port or https://host:port (SOCKS proxies need a Transport of your own)", c.ProxyURL)
		}
	}
	return nil
}

// ownedByTransport names the fields set that a custom Transport would
// silently ignore.
func (c *ConnectionInfo) ownedByTransport() []string {
	var set []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"CAPath", c.CAPath != ""},
		{"CAData", len(c.CAData) > 0},
		{"Insecure", c.Insecure},
		{"Username", c.Username != ""},
		{"Password", c.Password != ""},
		{"Scheme", c.Scheme != ""},
		{"Token", c.Token != ""},
		{"CertificatePath", c.CertificatePath != ""},
		{"CertificateData", len(c.CertificateData) > 0},
		{"PrivateKeyPath", c.PrivateKeyPath != ""},
		{"PrivateKeyData", len(c.PrivateKeyData) > 0},
		{"ProxyURL", c.ProxyURL != ""},
		{"TrustEnv", c.TrustEnv},
	} {
		if f.set {
			set = append(set, f.name)
		}
	}
	return set
}

// proxy is the proxy function for these credentials: the explicit
// ProxyURL, the environment's with TrustEnv, else nil (the caller decides).
// Validate has checked the URL.
func (c *ConnectionInfo) proxy() func(*http.Request) (*url.URL, error) {
	if c.ProxyURL != "" {
		u, err := url.Parse(c.ProxyURL)
		if err != nil {
			return func(*http.Request) (*url.URL, error) { return nil, err }
		}
		return http.ProxyURL(u)
	}
	if c.TrustEnv {
		return environmentProxy()
	}
	return nil
}

// environmentProxy honours HTTPS_PROXY, HTTP_PROXY and NO_PROXY as they are
// now. net/http's ProxyFromEnvironment reads them once per process, which
// would tie every operator embedded in a process to the first one's.
func environmentProxy() func(*http.Request) (*url.URL, error) {
	proxy := httpproxy.FromEnvironment().ProxyFunc()
	return func(r *http.Request) (*url.URL, error) { return proxy(r.URL) }
}

// AuthHeader is the Authorization header value, or "" for none.
func (c *ConnectionInfo) AuthHeader() string {
	switch {
	case c.Scheme != "" && c.Token != "":
		return c.Scheme + " " + c.Token
	case c.Scheme != "":
		return c.Scheme
	case c.Token != "":
		return "Bearer " + c.Token
	}
	return ""
}

// RESTConfig converts the connection info for client-go. A Transport is not
// carried over: the vault's transport uses it per request.
func (c *ConnectionInfo) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:        c.Server,
		Proxy:       c.proxy(),
		Username:    c.Username,
		Password:    c.Password,
		BearerToken: c.Token,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure: c.Insecure,
			CAFile:   c.CAPath, CAData: c.CAData,
			CertFile: c.CertificatePath, CertData: c.CertificateData,
			KeyFile: c.PrivateKeyPath, KeyData: c.PrivateKeyData,
		},
	}
}

// FromRESTConfig is the reverse of RESTConfig, for the built-in logins. A
// kubeconfig's proxy-url becomes ProxyURL.
func FromRESTConfig(cfg *rest.Config) *ConnectionInfo {
	token := cfg.BearerToken
	if token == "" && cfg.BearerTokenFile != "" {
		if b, err := os.ReadFile(cfg.BearerTokenFile); err == nil {
			token = string(b)
		}
	}
	info := &ConnectionInfo{
		Server: cfg.Host, Username: cfg.Username, Password: cfg.Password, Token: token,
		Insecure: cfg.Insecure, CAPath: cfg.CAFile, CAData: cfg.CAData,
		CertificatePath: cfg.CertFile, CertificateData: cfg.CertData,
		PrivateKeyPath: cfg.KeyFile, PrivateKeyData: cfg.KeyData,
	}
	// rest.Config keeps the proxy as a function only: ask it for the server.
	if u, err := url.Parse(cfg.Host); cfg.Proxy != nil && err == nil {
		if p, err := cfg.Proxy(&http.Request{URL: u}); err == nil && p != nil {
			info.ProxyURL = p.String()
		}
	}
	return info
}

// LoginWithKubeconfig reads credentials from a kubeconfig (KUBECONFIG or
// ~/.kube/config when path is empty), for login handlers that fall back to
// it. Returns nil and no error when there is no kubeconfig.
func LoginWithKubeconfig(path, context string) (*ConnectionInfo, error) {
	cfg, err := LoadConfig(path, context)
	if err != nil {
		return nil, err
	}
	info := FromRESTConfig(cfg)
	info.Priority = 10
	return info, nil
}

// LoginWithServiceAccount reads the pod's service account credentials;
// nil and no error outside of a pod.
func LoginWithServiceAccount() (*ConnectionInfo, error) {
	cfg, err := rest.InClusterConfig()
	if errors.Is(err, rest.ErrNotInCluster) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	info := FromRESTConfig(cfg)
	info.Priority = 20
	if ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		info.DefaultNamespace = string(ns)
	}
	return info, nil
}

// ErrNoCredentials means the login handlers returned nothing usable.
var ErrNoCredentials = errors.New("no credentials were retrieved from the login handlers")

// Vault keeps the credentials from login handlers. Requests take the best
// valid item; a 401 invalidates it and the next item is tried; an empty vault
// runs the login handlers again (re-authentication), with credentials once
// found invalid ignored, so that a login handler returning the same bad
// token cannot loop forever (compat: activities-reauth, activities-expiration).
type Vault struct {
	login func(ctx context.Context) ([]*ConnectionInfo, error)
	clock clock.PassiveClock

	mu      sync.Mutex
	items   []*ConnectionInfo
	invalid map[identity]bool
	logins  int
	relogin *sync.WaitGroup // non-nil while a login runs
	lastErr error
}

// NewVault creates a vault that obtains credentials with login.
func NewVault(login func(ctx context.Context) ([]*ConnectionInfo, error), clk clock.PassiveClock) *Vault {
	return &Vault{login: login, clock: clk, invalid: map[identity]bool{}}
}

// identity tells whether credentials handed back are ones found invalid:
// equal fields, or the same transport. A transport that cannot be compared
// (a func, say) is new every time it is handed back.
type identity struct {
	text      string
	transport any
}

func key(c *ConnectionInfo) identity {
	id := identity{text: c.Server + "\x00" + c.AuthHeader() + "\x00" + c.Username + "\x00" + string(c.CertificateData) + c.CertificatePath}
	if c.Transport != nil {
		id.transport = c.Transport
		if !reflect.ValueOf(c.Transport).Comparable() {
			id.transport = c
		}
	}
	return id
}

// Logins is how many login rounds have run.
func (v *Vault) Logins() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.logins
}

// Get returns the credentials to use, logging in when the vault is empty.
func (v *Vault) Get(ctx context.Context) (*ConnectionInfo, error) {
	for {
		v.mu.Lock()
		now := v.clock.Now()
		v.items = slices.DeleteFunc(v.items, func(c *ConnectionInfo) bool {
			return !c.Expiration.IsZero() && !now.Before(c.Expiration)
		})
		if len(v.items) > 0 {
			best := v.items[0].Priority
			for _, c := range v.items {
				best = max(best, c.Priority)
			}
			var tier []*ConnectionInfo
			for _, c := range v.items {
				if c.Priority == best {
					tier = append(tier, c)
				}
			}
			c := tier[rand.IntN(len(tier))]
			v.mu.Unlock()
			return c, nil
		}
		if wg := v.relogin; wg != nil {
			v.mu.Unlock()
			wg.Wait()
			v.mu.Lock()
			err := v.lastErr
			empty := len(v.items) == 0
			v.mu.Unlock()
			if empty {
				return nil, err
			}
			continue
		}
		wg := &sync.WaitGroup{}
		wg.Add(1)
		v.relogin = wg
		v.mu.Unlock()

		items, err := v.login(ctx)

		v.mu.Lock()
		v.logins++
		for _, c := range items {
			if c != nil && !v.invalid[key(c)] {
				v.items = append(v.items, c)
			}
		}
		if err == nil && len(v.items) == 0 {
			err = ErrNoCredentials
		}
		v.lastErr = err
		v.relogin = nil
		wg.Done()
		empty := len(v.items) == 0
		v.mu.Unlock()
		if empty {
			return nil, fmt.Errorf("cannot authenticate to the API: %w", err)
		}
	}
}

// Invalidate drops credentials that the API rejected.
func (v *Vault) Invalidate(c *ConnectionInfo) {
	v.mu.Lock()
	defer v.mu.Unlock()
	k := key(c)
	v.invalid[k] = true
	v.items = slices.DeleteFunc(v.items, func(x *ConnectionInfo) bool { return key(x) == k })
}

// Transport injects the vault's current Authorization header into every
// request and, on a 401, invalidates it and retries once with the next
// credentials (logging in again if none are left). Requests with bodies are
// retried only when the body can be replayed (GetBody), as client-go's are.
// Credentials with a Transport of their own send the request through it as
// it is, with no Authorization added and next not used.
func (v *Vault) Transport(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		for attempt := 0; ; attempt++ {
			c, err := v.Get(req.Context())
			if err != nil {
				return nil, err
			}
			r := req.Clone(req.Context())
			rt := next
			if c.Transport != nil {
				rt = c.Transport
			} else if h := c.AuthHeader(); h != "" {
				r.Header.Set("Authorization", h)
			} else if c.Username != "" {
				r.SetBasicAuth(c.Username, c.Password)
			}
			if attempt > 0 && req.GetBody != nil {
				if r.Body, err = req.GetBody(); err != nil {
					return nil, err
				}
			}
			resp, err := rt.RoundTrip(r)
			if err != nil || resp.StatusCode != http.StatusUnauthorized || attempt >= 3 || (req.Body != nil && req.GetBody == nil) {
				return resp, err
			}
			resp.Body.Close()
			v.Invalidate(c)
		}
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
