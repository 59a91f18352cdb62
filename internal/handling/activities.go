package handling

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/patch"
)

// ActivityHandler is a registered activity handler. Call adapts the user's
// function; its result is the handler's value (login: connection info;
// probe: the probe's result).
type ActivityHandler struct {
	Handler
	Kind handlers.ActivityKind
	Call func(ctx context.Context, a *handlers.Activity) (any, error)
}

// ActivityEnv is what activity handlers run with.
type ActivityEnv struct {
	Clock          clock.WithTicker
	Logger         *slog.Logger
	Memo           *handlers.Memo
	Settings       *config.Settings
	DefaultBackoff time.Duration
}

// activityError is the permanent failure of activity handlers: the reason
// an operator does not start (startup) or cannot authenticate (login).
type activityError struct {
	Kind     handlers.ActivityKind
	Failures map[string]string // handler id → last message
	// errs are the handlers' errors, for errors.Is and errors.As: a
	// *RetriesExceededError, a *HandlerTimeoutError, or their own.
	errs []error
}

// Unwrap returns the errors the failed handlers ended with.
func (e *activityError) Unwrap() []error { return e.errs }

func (e *activityError) Error() string {
	msg := fmt.Sprintf("%s activity failed:", e.Kind)
	for id, m := range e.Failures {
		msg += fmt.Sprintf(" handler %q: %s;", id, m)
	}
	return msg[:len(msg)-1]
}

// RunActivity runs the handlers of one activity all at once, each with its
// own retries, backoff and timeout, as Kopf runs activities, and returns the
// values of those that succeeded by handler id. Progress is kept in memory:
// activities belong to the process, not to an object.
func RunActivity(ctx context.Context, kind handlers.ActivityKind, hs []*ActivityHandler, env ActivityEnv) (map[string]any, error) {
	var (
		mu       sync.Mutex
		results  = map[string]any{}
		failures = map[string]string{}
		errs     []error
		wg       sync.WaitGroup
	)
	for _, ah := range hs {
		wg.Go(func() {
			value, msg, err, ok := runOne(ctx, kind, ah, env)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case ok && value != nil:
				results[ah.ID] = value
			case !ok:
				failures[ah.ID] = msg
				if err != nil {
					errs = append(errs, err)
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil && len(failures) > 0 {
		return results, err
	}
	if len(failures) > 0 {
		return results, &activityError{Kind: kind, Failures: failures, errs: errs}
	}
	return results, nil
}

// runOne drives one activity handler through Kopf's handling cycle with an
// in-memory progress storage, sleeping on the injected clock between tries.
func runOne(ctx context.Context, kind handlers.ActivityKind, ah *ActivityHandler, env ActivityEnv) (value any, msg string, err error, ok bool) {
	store := &memoryStorage{}
	h := ah.Handler
	if kind == handlers.Probe {
		// A probe answers the request that runs it: it gets one attempt, and
		// its failure is the answer (a 500), not a retry in a minute.
		h.Errors, h.Retries = handlers.ErrorsPermanent, 1
	}
	h.Fn = func(ctx context.Context, c *handlers.Change) (any, error) {
		v, err := ah.Call(ctx, &handlers.Activity{
			Attempt: c.Attempt, Kind: kind, Logger: env.Logger, Memo: env.Memo,
			Settings: env.Settings, Param: ah.Param,
		})
		if err == nil {
			value = v
		}
		return nil, err
	}
	for {
		c := &Cycle{
			Reason:   causes.Reason(kind),
			Kind:     "Activity",
			Handlers: []*Handler{&h}, Body: map[string]any{}, Patch: &patch.Patch{},
			Storage: store, Clock: env.Clock, Logger: env.Logger, DefaultBackoff: env.DefaultBackoff,
		}
		out := c.Run(ctx)
		if out.Done {
			if out.Failed > 0 {
				return nil, store.last.Message, out.Err, false
			}
			return value, "", nil, true
		}
		if ctx.Err() != nil {
			return nil, ctx.Err().Error(), ctx.Err(), false
		}
		if out.Delay > 0 {
			t := env.Clock.NewTimer(out.Delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err().Error(), ctx.Err(), false
			case <-t.C():
			}
		}
	}
}

// memoryStorage keeps one activity handler's progress for the process.
type memoryStorage struct {
	mu   sync.Mutex
	rec  *Record
	last Record // the final record, kept after the purge
}

func (m *memoryStorage) Fetch(id string, body map[string]any) (*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rec == nil {
		return nil, nil
	}
	r := *m.rec
	return &r, nil
}

func (m *memoryStorage) Store(id string, r *Record, body map[string]any, p *patch.Patch) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := *r
	m.rec, m.last = &c, c
}

func (m *memoryStorage) Purge(id string, body map[string]any, p *patch.Patch) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rec = nil
}

// AddActivity validates and records an activity handler; fn is the user's
// function, for its name.
func (r *Registry) AddActivity(kind handlers.ActivityKind, fn any, call func(ctx context.Context, a *handlers.Activity) (any, error), configure func(*Handler)) {
	ah := &ActivityHandler{Kind: kind, Call: call}
	if configure != nil {
		configure(&ah.Handler)
	}
	what, errs := ah.validate(registration{call: "On." + titleCase(string(kind)), noun: "handler", fn: fn})
	if r.record("activity "+string(kind), resources.Selector{}, what, &ah.Handler, errs) == nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.activities = append(r.activities, ah)
	}
}

// Activities returns the activity handlers of a kind in registration order.
func (r *Registry) Activities(kind handlers.ActivityKind) []*ActivityHandler {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*ActivityHandler
	for _, a := range r.activities {
		if a.Kind == kind {
			out = append(out, a)
		}
	}
	return out
}
