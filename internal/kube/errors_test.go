package kube

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kopfgo/kopfgo/internal/flowcontrol"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/internal/testlog"
)

var kex = resources.Resource{Group: "kopf.dev", Version: "v1", Plural: "kopfexamples", Namespaced: true}

func TestRetryRetriesTransientErrorsOnly(t *testing.T) {
	gr := schema.GroupResource{Group: "kopf.dev", Resource: "kopfexamples"}
	tests := []struct {
		name  string
		err   error
		calls int
	}{
		{"5xx", apierrors.NewInternalError(errors.New("boom")), 3},
		{"unavailable", apierrors.NewServiceUnavailable("later"), 3},
		{"network", &net.OpError{Op: "dial", Err: errors.New("refused")}, 3},
		{"403", apierrors.NewForbidden(gr, "x", errors.New("no")), 1},
		{"404", apierrors.NewNotFound(gr, "x"), 1},
		{"422", apierrors.NewInvalid(schema.GroupKind{Group: "kopf.dev", Kind: "KopfExample"}, "x", nil), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			r := Retry{Backoffs: []time.Duration{time.Second, 2 * time.Second}, Clock: clk}
			calls := 0
			done := make(chan error, 1)
			go func() {
				done <- r.do(context.Background(), nil, func() string { return "GET /x" }, func() error { calls++; return tt.err })
			}()
			for {
				select {
				case err := <-done:
					if !errors.Is(err, tt.err) || calls != tt.calls {
						t.Fatalf("calls = %d, err = %v; want %d calls", calls, err, tt.calls)
					}
					return
				default:
					if clk.HasWaiters() {
						clk.Step(2 * time.Second)
					}
				}
			}
		})
	}
}

func TestForbiddenSaysWhatIsMissing(t *testing.T) {
	gr := schema.GroupResource{Group: "kopf.dev", Resource: "kopfexamples"}
	err := explain(apierrors.NewForbidden(gr, "kex1", errors.New("no")), "patch", kex, "team-a", "kex1")
	if !errors.Is(err, ErrForbidden) || !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v, want ErrForbidden wrapping the API error", err)
	}
	for _, want := range []string{"may not patch", "kopfexamples", "in namespace team-a", `"patch"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

// Each attempt is logged in Kopf's words, at DEBUG: an outage is told by
// the gate's two lines; a request that gives up says so at ERROR, unless
// the gate knows the server is unavailable (compat: log-levels-outage).
func TestRetryLogsEachAttempt(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	down := flowcontrol.New(flowcontrol.Config{})
	rt := down.Wrap(roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, refused }))
	for range 3 {
		req, _ := http.NewRequest(http.MethodGet, "https://api/x", nil)
		_, _ = rt.RoundTrip(req)
	}
	if !down.Unavailable() {
		t.Fatal("three refused connections did not make the server unavailable")
	}
	for _, tt := range []struct {
		name     string
		failures int
		flow     *flowcontrol.Gate
		want     []string
	}{
		{"recovers", 2, nil, []string{
			"level=DEBUG msg=\"Request attempt #1/3 failed; will retry: GET /x -> dial tcp: connection refused\"",
			"level=DEBUG msg=\"Request attempt #2/3: GET /x\"",
			"level=DEBUG msg=\"Request attempt #2/3 failed; will retry: GET /x -> dial tcp: connection refused\"",
			"level=DEBUG msg=\"Request attempt #3/3: GET /x\"",
			"level=DEBUG msg=\"Request attempt #3/3 succeeded: GET /x\"",
		}},
		{"escalates", 3, nil, []string{
			"level=DEBUG msg=\"Request attempt #1/3 failed; will retry: GET /x -> dial tcp: connection refused\"",
			"level=DEBUG msg=\"Request attempt #2/3: GET /x\"",
			"level=DEBUG msg=\"Request attempt #2/3 failed; will retry: GET /x -> dial tcp: connection refused\"",
			"level=DEBUG msg=\"Request attempt #3/3: GET /x\"",
			"level=ERROR msg=\"Request attempt #3/3 failed; escalating: GET /x -> dial tcp: connection refused\"",
		}},
		{"escalates during an outage", 3, down, []string{
			"level=DEBUG msg=\"Request attempt #1/3 failed; will retry: GET /x -> dial tcp: connection refused\"",
			"level=DEBUG msg=\"Request attempt #2/3: GET /x\"",
			"level=DEBUG msg=\"Request attempt #2/3 failed; will retry: GET /x -> dial tcp: connection refused\"",
			"level=DEBUG msg=\"Request attempt #3/3: GET /x\"",
			"level=DEBUG msg=\"Request attempt #3/3 failed; escalating: GET /x -> dial tcp: connection refused\"",
		}},
		{"first time", 0, nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out testlog.Buffer
			logger := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{
				Level:       slog.LevelDebug,
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { return dropTime(a) },
			}))
			clk := testingclock.NewFakeClock(time.Now())
			r := Retry{Backoffs: []time.Duration{time.Second, time.Second}, Clock: clk, Logger: logger}
			calls := 0
			done := make(chan error, 1)
			go func() {
				done <- r.do(context.Background(), tt.flow, func() string { return "GET /x" }, func() error {
					if calls++; calls <= tt.failures {
						return refused
					}
					return nil
				})
			}()
			var err error
		wait:
			for {
				select {
				case err = <-done:
					break wait
				default:
					if clk.HasWaiters() {
						clk.Step(time.Second)
					}
					runtime.Gosched()
				}
			}
			if (err != nil) != (tt.failures > len(r.Backoffs)) {
				t.Errorf("err = %v after %d failures", err, tt.failures)
			}
			var got []string
			if s := strings.TrimSpace(out.String()); s != "" {
				got = strings.Split(s, "\n")
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func dropTime(a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
