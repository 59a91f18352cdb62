package daemons

import (
	"context"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/internal/timers"
	"github.com/kopfgo/kopfgo/patch"
)

// Config is shared by the daemons and timers of all objects of an operator.
type Config struct {
	Clock clock.WithTicker
	// DefaultBackoff is the retry delay after arbitrary errors of handlers
	// without their own Backoff (Execution.DefaultBackoff).
	DefaultBackoff time.Duration
	// Background tunes stopping; its defaults must be applied.
	Background config.Background
}

// Manager owns every daemon and timer of an operator, so that the operator's
// exit can stop them all and wait for them.
type Manager struct {
	cfg  Config
	base context.Context

	mu      sync.Mutex
	exiting bool
	exitCh  chan struct{}
	live    map[*daemon]struct{} // spawned and not yet settled
	wg      sync.WaitGroup       // stop watchers; the daemons are waited for via live
}

// NewManager returns a manager whose daemons get ctx's values (but not its
// cancellation: they are stopped by Shutdown, with their own stages).
func NewManager(ctx context.Context, cfg Config) *Manager {
	return &Manager{
		cfg:    cfg,
		base:   context.WithoutCancel(ctx),
		exitCh: make(chan struct{}),
		live:   map[*daemon]struct{}{},
	}
}

// Object is what the daemons of one object need from the reactor.
type Object struct {
	Resource resources.Resource
	Logger   *slog.Logger
	Memo     *handlers.Memo
	// Live returns the object's latest body; false once it is gone.
	Live func() (map[string]any, bool)
	// Apply sends a patch to the object.
	Apply func(ctx context.Context, p *patch.Patch) error
	// Wake asks for another pass over the object: a daemon has exited or
	// was abandoned, so the object may need its finalizer no more, or may
	// get a filtered daemon back.
	Wake func()
	// Observe, when set, is told of each call of a daemon or timer: its
	// handler id and kind ("daemon", "timer"), its error (nil on success),
	// its retry number, and how long it ran, for the metrics, which label
	// it with the object's resource and namespace.
	Observe func(id, kind string, err error, retry int, d time.Duration)
}

// NewSet returns the (empty) set of daemons and timers of one object; its
// idle clock starts now, the first sighting counting as a change.
func (m *Manager) NewSet(obj Object) *Set {
	return &Set{
		m:       m,
		obj:     obj,
		changes: timers.NewChanges(m.cfg.Clock.Now()),
		running: map[string]*daemon{},
		forever: map[string]bool{},
	}
}

// Running counts the daemons and timers that have not exited or been
// abandoned, across all objects.
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.live)
}

// Shutdown stops every daemon and timer with ErrOperatorExiting, in
// parallel and each with its own stages, and returns once each has exited or
// been abandoned (compat: daemons-exit). No daemon is spawned after it has begun.
func (m *Manager) Shutdown() {
	m.mu.Lock()
	if !m.exiting {
		m.exiting = true
		close(m.exitCh)
	}
	all := make([]*daemon, 0, len(m.live))
	for d := range m.live {
		all = append(all, d)
	}
	m.mu.Unlock()
	for _, d := range all {
		d.stop(handlers.ErrOperatorExiting)
	}
	for _, d := range all {
		<-d.settled
	}
	m.wg.Wait()
}

// track registers a new daemon unless the operator is exiting.
func (m *Manager) track(d *daemon) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.exiting {
		return false
	}
	m.live[d] = struct{}{}
	return true
}

func (m *Manager) untrack(d *daemon) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.live, d)
}

// awaitInstantExit gives daemons that were just asked to stop a moment to exit,
// so that a prompt daemon releases its object in the same pass (compat:
// settings-background): up to InstantExitTimeout, or a few scheduler yields
// without one.
func (m *Manager) awaitInstantExit(ds []*daemon) {
	if len(ds) == 0 {
		return
	}
	settled := func() bool {
		for _, d := range ds {
			select {
			case <-d.settled:
			default:
				return false
			}
		}
		return true
	}
	if t := m.cfg.Background.InstantExitTimeout; t > 0 {
		timer := m.cfg.Clock.NewTimer(t)
		defer timer.Stop()
		for _, d := range ds {
			select {
			case <-d.settled:
			case <-timer.C():
				return
			}
		}
		return
	}
	for i := 0; i < m.cfg.Background.InstantExitZeroTimeCycles && !settled(); i++ {
		runtime.Gosched()
	}
}
