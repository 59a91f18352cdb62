package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/flowcontrol"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// ErrForbidden marks requests the operator's identity is not allowed to make.
var ErrForbidden = errors.New("forbidden")

// Retry is how the operator's own requests are retried: 5xx responses and
// network errors are transient and retried after each of the backoffs in
// turn; 429 is retried by client-go itself, honouring Retry-After; other
// 4xx responses are final and surface at once. Each failed attempt is
// logged in Kopf's words ("Request attempt #1/9 failed; will retry: ..."),
// but at DEBUG where Kopf logs ERROR: an outage fails every object's
// requests, and one line per attempt per object buried the story, which
// the flow control's gate tells in two lines (unavailable, back). The
// final "escalating" line stays at ERROR, unless the gate knows the server
// is unavailable (compat: log-levels-outage).
type Retry struct {
	Backoffs []time.Duration
	Clock    clock.Clock
	// Logger gets the attempts' lines; nil logs nothing.
	Logger *slog.Logger
}

// do calls call until it succeeds, fails for good, or the backoffs are
// exhausted; what names the request in the log ("GET https://…/apis"),
// called only when a line is logged (patches pass here on the hot path).
// flow, when set, is the gate whose outage makes the escalation quiet.
func (r Retry) do(ctx context.Context, flow *flowcontrol.Gate, what func() string, call func() error) error {
	count := len(r.Backoffs) + 1
	for attempt := 0; ; attempt++ {
		idx := fmt.Sprintf("#%d/%d", attempt+1, count)
		if attempt > 0 {
			r.log(ctx, slog.LevelDebug, "Request attempt %s: %s", idx, what())
		}
		err := call()
		if err == nil {
			if attempt > 0 {
				r.log(ctx, slog.LevelDebug, "Request attempt %s succeeded: %s", idx, what())
			}
			return nil
		}
		if !flowcontrol.Transient(err) || ctx.Err() != nil {
			return err
		}
		if attempt >= len(r.Backoffs) {
			level := slog.LevelError
			if flow.Unavailable() {
				level = slog.LevelDebug
			}
			r.log(ctx, level, "Request attempt %s failed; escalating: %s -> %v", idx, what(), err)
			return err
		}
		r.log(ctx, slog.LevelDebug, "Request attempt %s failed; will retry: %s -> %v", idx, what(), err)
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

func (r Retry) log(ctx context.Context, level slog.Level, format string, args ...any) {
	if r.Logger != nil && r.Logger.Enabled(ctx, level) {
		r.Logger.Log(ctx, level, fmt.Sprintf(format, args...))
	}
}

// verbPatchStatus is the verb of a status patch in messages.
const verbPatchStatus = "patch the status of"

// explain turns a failed request into an error that says what to do: a 403
// names the verb, resource and namespace the operator lacks.
func explain(err error, verb string, res resources.Resource, namespace, name string) error {
	if apierrors.IsForbidden(err) {
		where := "cluster-wide"
		if namespace != "" {
			where = "in namespace " + namespace
		}
		// The rule to grant: the verb itself, on "plural/status" for the
		// status subresource, as RBAC rules and `kopfgo rbac` spell them.
		rule, resource := verb, res.Plural
		if verb == verbPatchStatus {
			rule, resource = "patch", res.Plural+"/status"
		}
		return fmt.Errorf("%w: the operator may not %s %s %s (object %s); grant it the %q verb on %q in its RBAC: %w",
			ErrForbidden, verb, res, where, name, rule, resource+"."+res.Group, err)
	}
	return fmt.Errorf("%s %s %s: %w", verb, res, objectName(namespace, name), err)
}
