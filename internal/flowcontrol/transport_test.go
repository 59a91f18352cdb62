package flowcontrol

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		method, url string
		class       Class
		gated       bool
	}{
		{"PATCH", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/x", Write, true},
		{"POST", "/api/v1/namespaces/ns/events", Write, true},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", Write, false},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/ns/leases?labelSelector=a", Read, false},
		{"PUT", "/apis/kopf.dev/v1/namespaces/leases/kopfexamples/x", Write, true},
		{"DELETE", "/api/v1/namespaces/ns/pods/p", Write, true},
		{"GET", "/apis/kopf.dev/v1/kopfexamples?limit=500", Read, true},
		{"GET", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/x", Read, true},
		{"GET", "/apis/kopf.dev/v1/kopfexamples?allowWatchBookmarks=true&resourceVersion=5&watch=true", Read, false},
		{"GET", "/apis/kopf.dev/v1/kopfexamples?watch=1", Read, false},
		{"GET", "/apis/kopf.dev/v1/kopfexamples?watch=false", Read, true},
		{"GET", "/api/v1/watch/namespaces", Read, false},
		{"GET", "/api/v1/namespaces/ns/pods/p/log?follow=true", Read, false},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		c, gated := classify(&http.Request{Method: tc.method, URL: u})
		if gated != tc.gated || (gated && c != tc.class) {
			t.Errorf("%s %s: %s gated=%v, want %s gated=%v", tc.method, tc.url, c, gated, tc.class, tc.gated)
		}
	}
}

// script is an API server that answers as it is told, in turn.
type script struct {
	mu      sync.Mutex
	answers []func(http.ResponseWriter)
	seen    []string
}

func (s *script) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, req.Method+" "+req.URL.RequestURI())
	answer := func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) }
	if !strings.Contains(req.URL.RawQuery, "watch=true") && len(s.answers) > 0 {
		answer, s.answers = s.answers[0], s.answers[1:]
	}
	s.mu.Unlock()
	answer(w)
}

func status(code int, header ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
	}
}

func TestRoundTripperFollowsTheServersAnswers(t *testing.T) {
	srv := &script{answers: []func(http.ResponseWriter){
		status(http.StatusTooManyRequests, "Retry-After", "1", "X-Kubernetes-PF-PriorityLevel-UID", "pl-1"),
		status(http.StatusOK),
		status(http.StatusServiceUnavailable), status(http.StatusServiceUnavailable), status(http.StatusServiceUnavailable),
		status(http.StatusOK),
	}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	r := newRig(t, Config{Host: ts.URL})
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: r.g.Wrap(base)}
	send := func(method, path string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), method, ts.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	const obj = "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/x"

	if code := send("PATCH", obj); code != http.StatusTooManyRequests {
		t.Fatalf("first patch: %d, want the scripted 429", code)
	}
	// The writes wait out the Retry-After; watches and reads do not.
	done := make(chan int, 1)
	waited := r.g.Stats().Waited
	go func() { done <- send("PATCH", obj) }()
	for r.g.Stats().Waited == waited {
		select {
		case code := <-done:
			t.Fatalf("a patch went (%d) during Retry-After", code)
		default:
		}
	}
	if code := send("GET", "/apis/kopf.dev/v1/kopfexamples?watch=true"); code != http.StatusOK {
		t.Fatalf("watch: %d", code)
	}
	r.clk.Step(time.Second)
	if code := <-done; code != http.StatusOK {
		t.Fatalf("the patch after Retry-After: %d, want the scripted 200", code)
	}

	for range 3 {
		send("PATCH", obj)
	}
	if !r.g.Stats().Unavailable {
		t.Fatal("three 503s in a row did not make the server unavailable")
	}
	go func() { done <- send("GET", obj) }()
	for r.g.Stats().Reads.Waiting == 0 {
		select {
		case code := <-done:
			t.Fatalf("a read went (%d) before the first probe", code)
		default:
		}
	}
	r.clk.Step(firstProbe)
	if code := <-done; code != http.StatusOK {
		t.Fatalf("the probe: %d, want the scripted 200", code)
	}
	if r.g.Stats().Unavailable {
		t.Error("still unavailable after the probe succeeded")
	}

	_, rejected := r.obs.snapshot()
	if want := []string{"write 429", "write 503", "write 503", "write 503"}; !slices.Equal(rejected, want) {
		t.Errorf("rejections %v, want %v", rejected, want)
	}
	log := r.log.String()
	for _, want := range []string{"is overloaded: 503 Service Unavailable;", "is back after 500ms: 1 requests waited for it, 3 failed."} {
		if !strings.Contains(log, want) {
			t.Errorf("log:\n%s\nwant %q", log, want)
		}
	}
}

func TestOutageWarningNamesAPFPriorityLevel(t *testing.T) {
	r := newRig(t, Config{Host: "https://api"})
	throttled := outcome{kind: overloaded, code: 429, status: "429 Too Many Requests", priority: "7f0e"}
	for range downAfter {
		r.finish(r.now(Write), time.Millisecond, throttled)
	}
	if want := "is overloaded: 429 Too Many Requests (APF priority level 7f0e);"; !strings.Contains(r.log.String(), want) {
		t.Errorf("log:\n%s\nwant %q", r.log, want)
	}
}

// answer is a transport that answers at once, to measure the gate alone.
type answer struct{ resp *http.Response }

func (a answer) RoundTrip(*http.Request) (*http.Response, error) { return a.resp, nil }

// BenchmarkRoundTrip is the gate's cost to a request that never waits: a
// write (the gate judges its latency) and a read (it does not).
func BenchmarkRoundTrip(b *testing.B) {
	write, err := http.NewRequest(http.MethodPatch, "https://api/apis/kopf.dev/v1/namespaces/ns/kopfexamples/x", nil)
	if err != nil {
		b.Fatal(err)
	}
	read, err := http.NewRequest(http.MethodGet, "https://api/apis/kopf.dev/v1/namespaces/ns/kopfexamples/x", nil)
	if err != nil {
		b.Fatal(err)
	}
	next := answer{&http.Response{StatusCode: http.StatusOK}}
	for _, bc := range []struct {
		name string
		req  *http.Request
		rt   http.RoundTripper
	}{
		{"bare", write, next},
		{"gated", write, New(Config{}).Wrap(next)},
		{"gated-read", read, New(Config{}).Wrap(next)},
	} {
		req := bc.req
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.rt.RoundTrip(req); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"-parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := bc.rt.RoundTrip(req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
