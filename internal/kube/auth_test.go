package kube

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"
)

// headerTransport answers every request itself, recording what it got.
type headerTransport struct {
	status int
	seen   []http.Header
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.seen = append(t.seen, r.Header.Clone())
	return &http.Response{StatusCode: t.status, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
}

func TestConnectionInfoValidate(t *testing.T) {
	rt := &headerTransport{}
	tests := []struct {
		name string
		info ConnectionInfo
		want string // a part of the error; "" for valid
	}{
		{"token", ConnectionInfo{Server: "https://k", Token: "t"}, ""},
		{"no server", ConnectionInfo{Token: "t"}, "no Server"},
		{"CA twice", ConnectionInfo{Server: "https://k", CAPath: "/ca", CAData: []byte("x")}, "both CAPath and CAData"},
		{"transport alone", ConnectionInfo{Server: "https://k", Transport: rt, Priority: 3, DefaultNamespace: "ns"}, ""},
		{"transport and token", ConnectionInfo{Server: "https://k", Transport: rt, Token: "t"}, "a Transport and also Token: "},
		{"transport and TLS", ConnectionInfo{Server: "https://k", Transport: rt, CAData: []byte("x"), Insecure: true, CertificatePath: "/c", PrivateKeyData: []byte("k")},
			"a Transport and also CAData, Insecure, CertificatePath, PrivateKeyData: "},
		{"transport and basic auth", ConnectionInfo{Server: "https://k", Transport: rt, Username: "u", Password: "p"}, "also Username, Password: "},
		{"transport and proxy", ConnectionInfo{Server: "https://k", Transport: rt, ProxyURL: "http://p:3128", TrustEnv: true}, "also ProxyURL, TrustEnv: "},
		{"http proxy", ConnectionInfo{Server: "https://k", ProxyURL: "http://p:3128"}, ""},
		{"https proxy", ConnectionInfo{Server: "https://k", ProxyURL: "https://user:pw@p:3128"}, ""},
		{"socks proxy", ConnectionInfo{Server: "https://k", ProxyURL: "socks5://p:1080"}, "is not supported"},
		{"proxy without host", ConnectionInfo{Server: "https://k", ProxyURL: "p:3128"}, "is not supported"},
		{"proxy not a URL", ConnectionInfo{Server: "https://k", ProxyURL: "http://p:port"}, "ProxyURL is not a URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.info.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want no error", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate() = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestRESTConfigProxy(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://from-env:3128")
	t.Setenv("NO_PROXY", "")
	req := &http.Request{URL: &url.URL{Scheme: "https", Host: "k:6443"}}
	tests := []struct {
		name string
		info ConnectionInfo
		want string // the proxy for req; "" for none or no proxy function
	}{
		{"none", ConnectionInfo{Server: "https://k:6443"}, ""},
		{"explicit", ConnectionInfo{Server: "https://k:6443", ProxyURL: "http://explicit:8080"}, "http://explicit:8080"},
		{"environment", ConnectionInfo{Server: "https://k:6443", TrustEnv: true}, "http://from-env:3128"},
		{"explicit wins", ConnectionInfo{Server: "https://k:6443", ProxyURL: "http://explicit:8080", TrustEnv: true}, "http://explicit:8080"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.info.RESTConfig()
			got := ""
			if cfg.Proxy != nil {
				u, err := cfg.Proxy(req)
				if err != nil {
					t.Fatal(err)
				}
				if u != nil {
					got = u.String()
				}
			}
			if got != tt.want {
				t.Errorf("proxy = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFromRESTConfigKeepsTheProxyURL(t *testing.T) {
	u, _ := url.Parse("http://proxy:3128")
	info := FromRESTConfig(&rest.Config{Host: "https://k:6443", Proxy: http.ProxyURL(u)})
	if info.ProxyURL != "http://proxy:3128" {
		t.Errorf("ProxyURL = %q, want http://proxy:3128", info.ProxyURL)
	}
	if info := FromRESTConfig(&rest.Config{Host: "https://k:6443"}); info.ProxyURL != "" {
		t.Errorf("ProxyURL = %q without a proxy, want none", info.ProxyURL)
	}
}

// vaultWith returns a vault whose login rounds hand out the given
// credentials, one round each; later rounds hand out nothing.
func vaultWith(rounds ...*ConnectionInfo) (*Vault, *int) {
	n := 0
	return NewVault(func(context.Context) ([]*ConnectionInfo, error) {
		n++
		if n > len(rounds) {
			return nil, nil
		}
		return []*ConnectionInfo{rounds[n-1]}, nil
	}, testingclock.NewFakeClock(time.Now())), &n
}

func get(t *testing.T, rt http.RoundTripper) (*http.Response, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "https://k:6443/api", nil)
	req.Header.Set("User-Agent", "kopfgo")
	return rt.RoundTrip(req)
}

func TestVaultSendsThroughTheCredentialsTransport(t *testing.T) {
	custom := &headerTransport{status: http.StatusOK}
	next := &headerTransport{status: http.StatusOK}
	v, _ := vaultWith(&ConnectionInfo{Server: "https://k:6443", Transport: custom})
	resp, err := get(t, v.Transport(next))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("RoundTrip = %v, %v; want 200", resp, err)
	}
	if len(next.seen) != 0 || len(custom.seen) != 1 {
		t.Fatalf("the default transport got %d requests, the custom one %d; want 0 and 1", len(next.seen), len(custom.seen))
	}
	if h := custom.seen[0]; h.Get("Authorization") != "" || h.Get("User-Agent") != "kopfgo" {
		t.Errorf("the custom transport got Authorization %q, User-Agent %q; want none and kopfgo", h.Get("Authorization"), h.Get("User-Agent"))
	}
}

func TestVaultInvalidatesACustomTransportOn401(t *testing.T) {
	rejected := &headerTransport{status: http.StatusUnauthorized}
	accepted := &headerTransport{status: http.StatusOK}
	v, logins := vaultWith(
		&ConnectionInfo{Server: "https://k:6443", Transport: rejected},
		&ConnectionInfo{Server: "https://k:6443", Transport: accepted},
	)
	resp, err := get(t, v.Transport(&headerTransport{status: http.StatusTeapot}))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("RoundTrip = %v, %v; want 200 through the second login's transport", resp, err)
	}
	if *logins != 2 || len(rejected.seen) != 1 || len(accepted.seen) != 1 {
		t.Errorf("logins %d, rejected transport %d requests, accepted %d; want 2, 1, 1", *logins, len(rejected.seen), len(accepted.seen))
	}
}

func TestVaultIgnoresARejectedTransportHandedBack(t *testing.T) {
	rejected := &headerTransport{status: http.StatusUnauthorized}
	v, logins := vaultWith(
		&ConnectionInfo{Server: "https://k:6443", Transport: rejected},
		&ConnectionInfo{Server: "https://k:6443", Transport: rejected, Priority: 1},
	)
	_, err := get(t, v.Transport(&headerTransport{status: http.StatusTeapot}))
	if !errors.Is(err, ErrNoCredentials) {
		t.Errorf("RoundTrip error = %v, want ErrNoCredentials", err)
	}
	if *logins != 2 || len(rejected.seen) != 1 {
		t.Errorf("logins %d, requests through the rejected transport %d; want 2, 1", *logins, len(rejected.seen))
	}
}

// A transport that cannot be compared cannot be recognised: handed back, it
// is tried again.
func TestVaultRetriesAFuncTransportHandedBack(t *testing.T) {
	calls := 0
	fn := roundTripper(func(r *http.Request) (*http.Response, error) {
		calls++
		status := http.StatusUnauthorized
		if calls > 1 {
			status = http.StatusOK
		}
		return &http.Response{StatusCode: status, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	})
	v, logins := vaultWith(
		&ConnectionInfo{Server: "https://k:6443", Transport: fn},
		&ConnectionInfo{Server: "https://k:6443", Transport: fn},
	)
	resp, err := get(t, v.Transport(&headerTransport{status: http.StatusTeapot}))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("RoundTrip = %v, %v; want 200 on the second try", resp, err)
	}
	if *logins != 2 {
		t.Errorf("logins %d, want 2", *logins)
	}
}

// Credentials are dropped when their Expiration passes; with none left, the
// vault logs in again before the next request, without waiting for a 401.
// Among valid ones, the highest Priority is used (compat: activities-expiration,
// diff-vault-order).
func TestVaultDropsExpiredCredentialsAndPrefersTheHighestPriority(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	rounds := [][]*ConnectionInfo{
		{
			{Server: "https://k:6443", Token: "low", Priority: 1, Expiration: clk.Now().Add(2 * time.Minute)},
			{Server: "https://k:6443", Token: "high", Priority: 2, Expiration: clk.Now().Add(time.Minute)},
		},
		{{Server: "https://k:6443", Token: "fresh", Priority: 3}},
	}
	logins := 0
	v := NewVault(func(context.Context) ([]*ConnectionInfo, error) {
		logins++
		if logins > len(rounds) {
			return nil, nil
		}
		return rounds[logins-1], nil
	}, clk)
	for range 10 { // the choice within a priority is random: ask often
		c, err := v.Get(t.Context())
		if err != nil || c.Token != "high" {
			t.Fatalf("Get = %v, %v; want the priority-2 token", c, err)
		}
	}
	clk.Step(time.Minute)
	c, err := v.Get(t.Context())
	if err != nil || c.Token != "low" {
		t.Fatalf("after the expiration: Get = %v, %v; want the remaining token", c, err)
	}
	if logins != 1 {
		t.Errorf("logins %d, want 1: a valid token is left", logins)
	}
	clk.Step(time.Minute)
	c, err = v.Get(t.Context())
	if err != nil || c.Token != "fresh" || logins != 2 {
		t.Fatalf("all expired: Get = %v, %v after %d logins; want the second login's token", c, err, logins)
	}
}
