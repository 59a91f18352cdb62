package kopfgo

import (
	"context"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/kube"
)

// Activity is the argument of startup, cleanup, login and probe handlers.
// Startup handlers may change Settings: they run before anything else.
type Activity = handlers.Activity

// ActivityFunc is a startup or cleanup handler.
type ActivityFunc func(ctx context.Context, a *Activity) error

// LoginFunc is a login handler: it returns where the API is and how to
// authenticate, or nil for "no credentials from me".
type LoginFunc func(ctx context.Context, a *Activity) (*ConnectionInfo, error)

// ProbeFunc is a liveness probe handler; its result is served by the
// liveness endpoint under the handler's id (nil results are left out).
type ProbeFunc func(ctx context.Context, a *Activity) (any, error)

// ConnectionInfo is what login handlers return.
type ConnectionInfo = kube.ConnectionInfo

// LoginWithKubeconfig is the built-in login from a kubeconfig file (path ""
// means KUBECONFIG or ~/.kube/config; context "" the current one), for login
// handlers that fall back to it.
func LoginWithKubeconfig(path, context string) (*ConnectionInfo, error) {
	return kube.LoginWithKubeconfig(path, context)
}

// LoginWithServiceAccount is the built-in login from the pod's service
// account; nil and no error outside of a pod.
func LoginWithServiceAccount() (*ConnectionInfo, error) { return kube.LoginWithServiceAccount() }

func activityConfig(opts []HandlerOption) func(*handling.Handler) {
	return func(h *handling.Handler) {
		for _, o := range opts {
			o.applyActivity(h)
		}
	}
}

// The activities take HandlerOptions: ID, Param, Retries, Backoff, Timeout,
// Errors; they have no object to filter.

// Startup registers a handler that runs when the operator starts, before it
// touches the cluster: nothing is watched until every startup handler has
// succeeded (they are retried like other handlers), and a permanent failure
// stops the operator with an error. Change a.Settings here.
func (r Registrar) Startup(fn ActivityFunc, opts ...HandlerOption) {
	r.op.reg.AddActivity(handlers.Startup, fn, func(ctx context.Context, a *Activity) (any, error) {
		return nil, fn(ctx, a)
	}, activityConfig(opts))
}

// Cleanup registers a handler that runs when the operator exits, after
// everything else has stopped. It does not run when the process is killed.
func (r Registrar) Cleanup(fn ActivityFunc, opts ...HandlerOption) {
	r.op.reg.AddActivity(handlers.Cleanup, fn, func(ctx context.Context, a *Activity) (any, error) {
		return nil, fn(ctx, a)
	}, activityConfig(opts))
}

// Login registers a handler that provides the credentials. Without login
// handlers, the operator uses the kubeconfig or the in-cluster service
// account. With them, a 401 from the API drops the credentials in use and
// runs the login handlers again.
func (r Registrar) Login(fn LoginFunc, opts ...HandlerOption) {
	r.op.reg.AddActivity(handlers.Login, fn, func(ctx context.Context, a *Activity) (any, error) {
		info, err := fn(ctx, a)
		if info == nil {
			return nil, err
		}
		return info, err
	}, activityConfig(opts))
}

// Probe registers a liveness probe handler, run on requests to the liveness
// endpoint (see Options.Liveness); results are cached for 10 seconds. A probe
// gets one attempt per request: an error makes the endpoint answer 500, so
// that the kubelet restarts an operator whose probe fails.
func (r Registrar) Probe(fn ProbeFunc, opts ...HandlerOption) {
	r.op.reg.AddActivity(handlers.Probe, fn, func(ctx context.Context, a *Activity) (any, error) {
		return fn(ctx, a)
	}, activityConfig(opts))
}
