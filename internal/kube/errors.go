package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/resources"
)

// ErrForbidden marks requests the operator's identity is not allowed to make.
var ErrForbidden = errors.New("forbidden")

// Retry is how the operator's own requests are retried: 5xx responses and
// network errors are transient and retried after each of the backoffs in
// turn; 429 is retried by client-go itself, honouring Retry-After; other
// 4xx responses are final and surface at once.
type Retry struct {
	Backoffs []time.Duration
	Clock    clock.Clock
}

func (r Retry) do(ctx context.Context, call func() error) error {
	for attempt := 0; ; attempt++ {
		err := call()
		if err == nil || !transient(err) || attempt >= len(r.Backoffs) || ctx.Err() != nil {
			return err
		}
		clk := r.Clock
		if clk == nil {
			clk = clock.RealClock{}
		}
		t := clk.NewTimer(r.Backoffs[attempt])
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C():
		}
	}
}

func transient(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code >= 500 || code == 429
	}
	var netErr net.Error
	return errors.As(err, &netErr) || utilnet.IsConnectionReset(err) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsProbableEOF(err)
}

// explain turns a failed request into an error that says what to do: a 403
// names the verb, resource and namespace the operator lacks.
func explain(err error, verb string, res resources.Resource, namespace, name string) error {
	if apierrors.IsForbidden(err) {
		where := "cluster-wide"
		if namespace != "" {
			where = "in namespace " + namespace
		}
		return fmt.Errorf("%w: the operator may not %s %s %s (object %s); grant it the %q verb on %q in its RBAC: %w",
			ErrForbidden, verb, res, where, name, verb, res.Plural+"."+res.Group, err)
	}
	return fmt.Errorf("%s %s %s: %w", verb, res, objectName(namespace, name), err)
}
