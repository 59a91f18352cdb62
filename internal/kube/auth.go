package kube

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// ConnectionInfo is what a login handler returns: where the API is and how
// to authenticate there (Kopf's ConnectionInfo). Set either a path or the
// data of each TLS item, not both.
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
	return nil
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

// RESTConfig converts the connection info for client-go.
func (c *ConnectionInfo) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:        c.Server,
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

// FromRESTConfig is the reverse of RESTConfig, for the built-in logins.
func FromRESTConfig(cfg *rest.Config) *ConnectionInfo {
	token := cfg.BearerToken
	if token == "" && cfg.BearerTokenFile != "" {
		if b, err := os.ReadFile(cfg.BearerTokenFile); err == nil {
			token = string(b)
		}
	}
	return &ConnectionInfo{
		Server: cfg.Host, Username: cfg.Username, Password: cfg.Password, Token: token,
		Insecure: cfg.Insecure, CAPath: cfg.CAFile, CAData: cfg.CAData,
		CertificatePath: cfg.CertFile, CertificateData: cfg.CertData,
		PrivateKeyPath: cfg.KeyFile, PrivateKeyData: cfg.KeyData,
	}
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
// token cannot loop forever (K2-011, K2-012).
type Vault struct {
	login func(ctx context.Context) ([]*ConnectionInfo, error)
	clock clock.PassiveClock

	mu      sync.Mutex
	items   []*ConnectionInfo
	invalid map[string]bool
	logins  int
	relogin *sync.WaitGroup // non-nil while a login runs
	lastErr error
}

// NewVault creates a vault that obtains credentials with login.
func NewVault(login func(ctx context.Context) ([]*ConnectionInfo, error), clk clock.PassiveClock) *Vault {
	return &Vault{login: login, clock: clk, invalid: map[string]bool{}}
}

func key(c *ConnectionInfo) string {
	return c.Server + "\x00" + c.AuthHeader() + "\x00" + c.Username + "\x00" + string(c.CertificateData) + c.CertificatePath
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
func (v *Vault) Transport(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		for attempt := 0; ; attempt++ {
			c, err := v.Get(req.Context())
			if err != nil {
				return nil, err
			}
			r := req.Clone(req.Context())
			if h := c.AuthHeader(); h != "" {
				r.Header.Set("Authorization", h)
			} else if c.Username != "" {
				r.SetBasicAuth(c.Username, c.Password)
			}
			if attempt > 0 && req.GetBody != nil {
				if r.Body, err = req.GetBody(); err != nil {
					return nil, err
				}
			}
			resp, err := next.RoundTrip(r)
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
