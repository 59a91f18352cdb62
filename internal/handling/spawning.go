package handling

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kopfgo/kopfgo/internal/handlers"
)

// SpawnKind tells daemons from timers.
type SpawnKind int

const (
	// KindDaemon runs the function once per object, for as long as it likes
	// (compat: daemons-spawn).
	KindDaemon SpawnKind = iota + 1
	// KindTimer calls the function per object on a schedule (compat: timers-interval).
	KindTimer
)

func (k SpawnKind) String() string {
	switch k {
	case KindDaemon:
		return "Daemon"
	case KindTimer:
		return "Timer"
	}
	return fmt.Sprintf("SpawnKind(%d)", int(k))
}

// Spawning is a registered daemon or timer: a handler that accompanies each
// matching object in the background rather than reacting to its changes. It
// embeds Handler, so that the options and filters every handler kind shares
// (ID, Retries, Backoff, Timeout, Errors, Param, …) configure it unchanged;
// Handler.Fn and Handler.Reason are unused.
type Spawning struct {
	Handler
	Kind SpawnKind
	Fn   handlers.SpawnFunc

	// InitialDelay postpones the first invocation after the object appears or
	// the operator starts (compat: daemons-initial-delay,
	// timers-initial-delay); InitialDelayFunc, when set, computes it from the
	// object instead.
	InitialDelay     time.Duration
	InitialDelayFunc func(*handlers.Spawn) time.Duration

	// Daemons: how a daemon is stopped (compat: daemons-stopping). Stopping is
	// cooperative: the Stopped flag is set at once, the daemon's ctx is
	// cancelled after CancellationBackoff, and after CancellationTimeout more a
	// daemon still running is reported and abandoned. Without a timeout it is
	// checked every CancellationPolling (0: the settings' default) and keeps
	// its object from being deleted.
	CancellationBackoff time.Duration
	CancellationTimeout time.Duration
	CancellationPolling time.Duration

	// Timers: the schedule (compat: timers).
	Interval time.Duration
	Idle     time.Duration
	Sharp    bool
}

// Title names the handler in logs: "Daemon 'id'" or "Timer 'id'".
func (s *Spawning) Title() string { return Title(s.Kind.String(), s.ID) }

// Call invokes the function; a panic becomes a PanicError.
func (s *Spawning) Call(ctx context.Context, arg *handlers.Spawn) (any, error) {
	return protect(ctx, s.Fn, arg)
}

// SpawnRegistration is what the public API hands over for a daemon or timer.
type SpawnRegistration struct {
	Resource string
	Kind     SpawnKind
	Fn       handlers.SpawnFunc
	// Named is the user's function when Fn adapts it (typed daemons and
	// timers), as in Registration. Nil: Fn.
	Named any
	// Configure applies the options; an ID it sets is the explicit id.
	Configure func(*Spawning)
}

// AddSpawning validates and records a daemon or timer.
func (r *Registry) AddSpawning(reg SpawnRegistration) {
	s := &Spawning{Kind: reg.Kind, Fn: reg.Fn}
	if reg.Configure != nil {
		reg.Configure(s)
	}
	what, errs := s.validate(registration{
		call: fmt.Sprintf("On.%s(%q)", reg.Kind, reg.Resource), noun: "handler", fn: adaptedFrom(reg.Fn, reg.Named),
		resource: reg.Resource, scoped: true, check: s.check,
	})
	// A daemon and a timer of one object share one namespace of ids: their
	// results both go to status.<id>.
	if r.record("spawning", s.Selector, what, &s.Handler, errs) == nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.spawning = append(r.spawning, s)
	}
}

// check is what only daemons and timers can get wrong.
func (s *Spawning) check() []error {
	var errs []error
	add := func(bad bool, msg string) {
		if bad {
			errs = append(errs, errors.New(msg))
		}
	}
	add(s.InitialDelay < 0, "InitialDelay must not be negative")
	add(s.CancellationBackoff < 0 || s.CancellationTimeout < 0 || s.CancellationPolling < 0,
		"CancellationBackoff, CancellationTimeout and CancellationPolling must not be negative")
	add(s.Interval < 0 || s.Idle < 0, "Interval and Idle must not be negative")
	switch s.Kind {
	case KindTimer:
		add(s.Interval == 0 && s.Idle == 0, "a timer needs an Interval, an Idle time, or both; for a function that runs once per object, register a Daemon")
		add(s.Sharp && s.Interval == 0, "Sharp needs an Interval: it keeps the invocations on the interval's grid")
		// The daemons' options share SpawnOption with the timers' (one
		// option type per family of kinds), so a misfit is caught here.
		add(s.CancellationBackoff != 0 || s.CancellationTimeout != 0 || s.CancellationPolling != 0,
			"CancellationBackoff, CancellationTimeout and CancellationPolling fit daemons only; remove them or register a Daemon")
	case KindDaemon:
		add(s.Interval != 0 || s.Idle != 0 || s.Sharp,
			"Interval, Idle and Sharp fit timers only: a daemon runs once per object until stopped; remove them or register a Timer")
	}
	return errs
}

// Spawning returns the daemons and timers in registration order.
func (r *Registry) Spawning() []*Spawning {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Spawning(nil), r.spawning...)
}
