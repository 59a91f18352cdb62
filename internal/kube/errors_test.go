package kube

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kopfgo/kopfgo/internal/resources"
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
				done <- r.do(context.Background(), func() error { calls++; return tt.err })
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
