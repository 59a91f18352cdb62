package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/persistence"
)

// DefaultFinalizer is the finalizer Kopf puts on objects whose deletion must
// wait for the operator (persistence.finalizer).
const DefaultFinalizer = "kopf.zalando.org/KopfFinalizerMarker"

// Settings is the operator's configuration. The zero value is Kopf's defaults.
type Settings struct {
	Persistence Persistence
	Execution   Execution
	Queueing    Queueing
	Watching    Watching
	Networking  Networking
	Scanning    Scanning
	Process     Process
	Posting     Posting
	Background  Background
	Logging     Logging
	Handling    Handling
	Admission   Admission
	Peering     Peering
}

// Persistence says where and how the operator keeps its state on objects.
type Persistence struct {
	// Finalizer blocks deletion while delete handlers are pending.
	// Default: "kopf.zalando.org/KopfFinalizerMarker".
	Finalizer string
	// ProgressStorage keeps per-handler progress. Default: Kopf's smart
	// storage (annotations, with the legacy status records read and purged).
	ProgressStorage persistence.Storage
	// DiffBaseStorage keeps the last handled essence. Default: the
	// kopf.zalando.org/last-handled-configuration annotation.
	DiffBaseStorage diffbase.Storage
	// ConsistencyTimeout bounds the wait for the operator's own patch to come
	// back through the watch before state-dependent handlers run again.
	// Default 5s; negative disables the wait.
	ConsistencyTimeout time.Duration
	// Conditions are the standard status.conditions (Ready, Reconciling,
	// Stalled) that kopfgo keeps on the custom resources it handles,
	// unlike Kopf; on by default (docs/conditions.md).
	Conditions Conditions
}

// Conditions tunes the status.conditions the framework writes
// (docs/conditions.md). Conditions that handlers set themselves
// (Patch.SetCondition) are written whatever these say.
type Conditions struct {
	// Disabled writes none of the framework's conditions, as Kopf writes
	// none: objects carry exactly what Kopf would write.
	Disabled bool
	// EveryPass writes them after every pass that changes them. By
	// default, on a resource with the status subresource, a pass that has
	// nothing else for status (a handler that returns no result) leaves a
	// change of only their message, reason or observedGeneration (an
	// update handled with success) to the next status write rather than
	// spend a request on it; a condition that appears, goes or changes its
	// status is written at once. EveryPass keeps observedGeneration
	// current at that cost.
	EveryPass bool
}

// Execution tunes handler invocation.
type Execution struct {
	// DefaultBackoff is the retry delay after an arbitrary error of a handler
	// without its own Backoff. Default 60s.
	DefaultBackoff time.Duration
	// MaxWorkers caps the passes in flight across objects, and so the
	// handlers running at once (a pass runs at most one changing handler,
	// plus the watching handlers of its observations); objects past it wait
	// in one queue, in the order their news came. 0: the cap follows the
	// API's flow control, two passes per write the API server takes now
	// (Kopf has no cap: docs/kopf-compatibility.md, flow-control).
	MaxWorkers int
}

// Queueing tunes the per-object workers.
type Queueing struct {
	// IdleTimeout is how long an object's worker lingers without events.
	// Default 5s.
	IdleTimeout time.Duration
	// ErrorDelays throttle an object after unexpected errors of the
	// framework itself (not handler errors). Default: Fibonacci 1s..610s.
	ErrorDelays []time.Duration
	// ExitTimeout is how long running handlers may go on when the operator
	// stops, before their ctx is cancelled. Default 2s (Kopf's
	// queueing.exit_timeout); negative: cancel at once.
	ExitTimeout time.Duration
	// ResourceRate caps the passes started per second for each resource
	// (all its objects together), with bursts of ResourceBurst (default:
	// the rate, at least 1), like controller-runtime's overall bucket.
	// 0: no cap. ErrorDelays are the per-object backoff.
	ResourceRate  float64
	ResourceBurst int
	// ObjectInterval is the least time between the starts of two passes of
	// one object: news that comes sooner waits for the rest of it, and
	// everything that came meanwhile is handled in one pass. It is counted
	// while the object's worker lives: a worker retires after IdleTimeout
	// without news, and a pass after that starts at once, so an interval
	// longer than IdleTimeout acts as IdleTimeout. 0: none.
	ObjectInterval time.Duration
}

// Watching tunes the watch streams. Reconnecting after errors follows
// client-go's reflector backoff (0.8s growing to 30s), not a setting.
type Watching struct {
	// ServerTimeout is sent as timeoutSeconds on watch requests; 0 lets the
	// server choose.
	ServerTimeout time.Duration
	// InactivityTimeout restarts a watch stream that has delivered nothing,
	// not even a bookmark, for this long: a stream silently dropped by a load
	// balancer would otherwise hang forever. Default 70s (bookmarks come
	// about every 60s); negative disables.
	InactivityTimeout time.Duration
	// ClientTimeout ends every watch request after this long on the client
	// side; 0: none.
	ClientTimeout time.Duration
	// KeepManagedFields keeps metadata.managedFields in the objects the
	// operator watches. By default they are dropped as objects arrive: they
	// are a large share of each cached object and nothing in the operator
	// reads them (the essence ignores them). Kopf keeps them in its bodies.
	KeepManagedFields bool
}

// WithDefaults returns a copy with every unset field given Kopf's default.
func (s Settings) WithDefaults() Settings {
	if s.Persistence.Finalizer == "" {
		s.Persistence.Finalizer = DefaultFinalizer
	}
	if s.Persistence.ProgressStorage == nil {
		s.Persistence.ProgressStorage = persistence.Default()
	}
	if s.Persistence.DiffBaseStorage == nil {
		s.Persistence.DiffBaseStorage = diffbase.Default()
	}
	if s.Persistence.ConsistencyTimeout == 0 {
		s.Persistence.ConsistencyTimeout = 5 * time.Second
	}
	if s.Execution.DefaultBackoff == 0 {
		s.Execution.DefaultBackoff = 60 * time.Second
	}
	if s.Queueing.IdleTimeout == 0 {
		s.Queueing.IdleTimeout = 5 * time.Second
	}
	if len(s.Queueing.ErrorDelays) == 0 {
		for _, n := range []int{1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610} {
			s.Queueing.ErrorDelays = append(s.Queueing.ErrorDelays, time.Duration(n)*time.Second)
		}
	}
	if s.Watching.InactivityTimeout == 0 {
		s.Watching.InactivityTimeout = 70 * time.Second
	}
	if s.Queueing.ExitTimeout == 0 {
		s.Queueing.ExitTimeout = 2 * time.Second
	}
	s.Networking = s.Networking.withDefaults()
	s.Peering = s.Peering.withDefaults()
	s.Process = s.Process.withDefaults()
	s.Posting = s.Posting.withDefaults()
	s.Background = s.Background.withDefaults()
	return s
}

// ErrSettings marks settings that cannot work.
var ErrSettings = errors.New("invalid settings")

// Validate reports the settings that cannot work, naming each.
func (s Settings) Validate() error {
	var errs []error
	bad := func(name string, v any, want string) {
		errs = append(errs, fmt.Errorf("%w: %s is %v; %s", ErrSettings, name, v, want))
	}
	if s.Execution.MaxWorkers < 0 {
		bad("Execution.MaxWorkers", s.Execution.MaxWorkers, "give a positive number, or 0 to follow the API's flow control")
	}
	if s.Queueing.ResourceRate < 0 {
		bad("Queueing.ResourceRate", s.Queueing.ResourceRate, "give passes per second, or 0 for no cap")
	}
	if s.Queueing.ResourceBurst < 0 {
		bad("Queueing.ResourceBurst", s.Queueing.ResourceBurst, "give a positive number, or 0 for the rate")
	}
	if s.Queueing.ObjectInterval < 0 {
		bad("Queueing.ObjectInterval", s.Queueing.ObjectInterval, "give a duration, or 0 for none")
	}
	if !(s.Admission.GoawayChance <= 1) {
		bad("Admission.GoawayChance", s.Admission.GoawayChance, "give a chance up to 1, 0 for the default (0.02), or a negative one for never")
	}
	return errors.Join(errs...)
}
