package reactor

import (
	"context"
	"time"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/posting"
)

// Hooks are told what the reactor does, for readiness and metrics. The
// reactor calls them at a handful of places only (each marked "hook:"), so
// that they survive changes of the reactor's inner structure; every method
// must be cheap and must not block, as most are called on hot paths.
type Hooks interface {
	// WatchStarted: a watch of a resource in a namespace (key
	// "resource@namespace") is started; WatchSynced: its initial listing,
	// indices included, has been processed; WatchStopped: it has stopped.
	WatchStarted(key string)
	WatchSynced(key string)
	WatchStopped(key string)
	// Served: the resources of the startup are all being watched.
	Served()
	// Unresolved: the registered resources that resolve to nothing, each
	// described (selector, handlers, the name it may be a typo of), after
	// the startup's scan and every rescan; none: all resolve. blocking:
	// the operator is not ready while any is unresolved.
	Unresolved(missing []string, blocking bool)
	// Paused: the operator stands by for these reasons (Config.Pause);
	// none: it serves again.
	Paused(reasons []string)
	// WatchEvent: a watch event of a resource, of a type ("ADDED", ...;
	// "LISTED" for the objects of the initial listing).
	WatchEvent(resource string, typ string)
	// WatchRestart: a list or watch failed or ended and is retried.
	WatchRestart(resource string)
	// Busy: an object's processing starts (+1) or ends (-1).
	Busy(delta int)
	// QueueWait: an object's pass starts d after the oldest news it
	// handles came (a watch event, a daemon's exit, a timer's touch).
	QueueWait(d time.Duration)
	// Handler: a handler ran (HandlerCall says which, where and how it
	// ended) for d.
	Handler(call HandlerCall, d time.Duration)
	// EventPosted: a Kubernetes Event was posted (err nil) or not.
	EventPosted(err error)
	// Daemons gives a count of the running daemons and timers.
	Daemons(running func() int)
	// Waiting gives a count of the objects waiting for a pass slot.
	Waiting(waiting func() int)
}

// HandlerCall is one call of a handler, as the Handler hook is told of it.
type HandlerCall struct {
	// Resource is the handler's resource as the logs name it
	// (kopfexamples.v1.kopf.dev); Namespace is its object's, "" for a
	// cluster-scoped one.
	Resource, Namespace string
	ID                  string
	// Reason is the cause for resource-changing handlers, "event" for
	// event handlers, "daemon" or "timer" for daemons and timers.
	Reason causes.Reason
	Err    error // nil: success
	Retry  int   // the attempt's number, 0 the first
}

// nopHooks is the Hooks of a Config without any.
type nopHooks struct{}

func (nopHooks) WatchStarted(string)                {}
func (nopHooks) WatchSynced(string)                 {}
func (nopHooks) WatchStopped(string)                {}
func (nopHooks) Served()                            {}
func (nopHooks) Unresolved([]string, bool)          {}
func (nopHooks) Paused([]string)                    {}
func (nopHooks) WatchEvent(string, string)          {}
func (nopHooks) WatchRestart(string)                {}
func (nopHooks) Busy(int)                           {}
func (nopHooks) QueueWait(time.Duration)            {}
func (nopHooks) Handler(HandlerCall, time.Duration) {}
func (nopHooks) EventPosted(error)                  {}
func (nopHooks) Daemons(func() int)                 {}
func (nopHooks) Waiting(func() int)                 {}

// countingClient tells the hooks of each Event posted.
type countingClient struct {
	posting.Client
	hooks Hooks
}

func (c countingClient) PostEvent(ctx context.Context, namespace string, body map[string]any) error {
	err := c.Client.PostEvent(ctx, namespace, body)
	c.hooks.EventPosted(err) // hook: events posted
	return err
}

// hooks is cfg.Hooks, or hooks that do nothing.
func (cfg *Config) hooks() Hooks {
	if cfg.Hooks == nil {
		return nopHooks{}
	}
	return cfg.Hooks
}
