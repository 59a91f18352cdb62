package flowcontrol

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Wrap puts the gate in front of rt; it suits rest.Config.Wrap. A nil gate
// returns rt as it is.
func (g *Gate) Wrap(rt http.RoundTripper) http.RoundTripper {
	if g == nil {
		return rt
	}
	return &transport{gate: g, next: rt}
}

type transport struct {
	gate *Gate
	next http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c, gated := classify(req)
	if !gated {
		episode := t.gate.episode.Load()
		resp, err := t.next.RoundTrip(req)
		t.gate.observe(episode, judge(req, resp, err))
		return resp, err
	}
	tk, err := t.gate.acquire(req.Context(), c)
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper closes the body, even unsent
		}
		return nil, err
	}
	resp, err := t.next.RoundTrip(req)
	t.gate.done(tk, judge(req, resp, err))
	return resp, err
}

// WrappedRoundTripper lets client-go reach the transport underneath (to
// close idle connections, for instance).
func (t *transport) WrappedRoundTripper() http.RoundTripper { return t.next }

// classify tells a request's class, and whether it is gated at all: watches
// (watch=true or 1 in the query, or the legacy /watch/ paths), streams
// that follow (follow=true: logs) and Leases are not.
func classify(req *http.Request) (Class, bool) {
	if lease(req.URL.Path) {
		return Write, false
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, "":
		if streaming(req.URL.RawQuery) || strings.Contains(req.URL.Path, "/watch/") {
			return Read, false
		}
		return Read, true
	}
	return Write, true
}

// lease tells the requests of coordination.k8s.io Leases (leader election,
// sharding): a renewal that waited in line behind a backlog's patches would
// miss its renew deadline and hand the Lease, and the backlog, over to
// another replica, which is the costliest moment for it.
func lease(path string) bool {
	rest, ok := strings.CutPrefix(path, "/apis/coordination.k8s.io/")
	return ok && strings.Contains(rest, "/leases")
}

// streaming scans a raw query for watch or follow set true, without the
// allocations of parsing it.
func streaming(q string) bool {
	for q != "" {
		var kv string
		kv, q, _ = strings.Cut(q, "&")
		k, v, _ := strings.Cut(kv, "=")
		if (k == "watch" || k == "follow") && (v == "true" || v == "1") {
			return true
		}
	}
	return false
}

type outcomeKind uint8

const (
	succeeded   outcomeKind = iota
	cancelled               // the caller gave up: says nothing about the server
	steered                 // 429 with Retry-After
	overloaded              // 429 without Retry-After, 500, 502, 503, 504
	timedOut                // a client-side timeout
	unreachable             // the connection failed
)

// outcome is what a response or error says about the server.
type outcome struct {
	kind outcomeKind
	// code is the status of a rejection (429, 5xx) for the metrics; 0
	// otherwise.
	code       int
	retryAfter time.Duration
	status     string // the response's status line, for the log
	priority   string // APF's priority level's UID of a 429
	err        error
}

func judge(req *http.Request, resp *http.Response, err error) outcome {
	if err != nil {
		if errors.Is(req.Context().Err(), context.Canceled) {
			return outcome{kind: cancelled}
		}
		var netErr net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()) {
			return outcome{kind: timedOut, err: err}
		}
		return outcome{kind: unreachable, err: err}
	}
	code := resp.StatusCode
	if code != http.StatusTooManyRequests && code < 500 {
		return outcome{kind: succeeded}
	}
	o := outcome{kind: succeeded, code: code, status: resp.Status, retryAfter: retryAfter(resp)}
	switch code {
	case http.StatusTooManyRequests:
		o.kind = overloaded
		if o.retryAfter > 0 {
			o.kind = steered
		}
		o.priority = resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID")
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		o.kind = overloaded
	}
	return o
}

// retryAfter reads Retry-After in seconds, the only form client-go honours.
func retryAfter(resp *http.Response) time.Duration {
	s, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || s <= 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

// describe says what failed, for the outage's warning.
func (o outcome) describe() string {
	switch {
	case o.err != nil:
		return o.err.Error()
	case o.priority != "":
		return o.status + " (APF priority level " + o.priority + ")"
	}
	return o.status
}

// Transient says whether err is the API server's trouble rather than the
// request's: a 5xx or 429 answer, or a network error (refused, reset,
// timed out). Such failures are retried, and logged quietly while the gate
// says the server is unavailable; the outage's own lines tell the story.
func Transient(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code >= 500 || code == http.StatusTooManyRequests
	}
	var netErr net.Error
	return errors.As(err, &netErr) || utilnet.IsConnectionReset(err) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsProbableEOF(err)
}

// Unavailable says whether the server is known to be unreachable or
// overloaded now; false for a nil gate.
func (g *Gate) Unavailable() bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.out != nil
}
