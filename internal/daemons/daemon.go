package daemons

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/timers"
	"github.com/kopfgo/kopfgo/patch"
)

// applyTimeout bounds a daemon's patch, which is sent even after the daemon
// was stopped: its last words (a final status) must reach the object.
const applyTimeout = 30 * time.Second

// daemon is one running daemon or timer of one object.
type daemon struct {
	set     *Set
	h       *handling.Spawning
	stopper *handling.Stopper
	ctx     context.Context
	cancel  context.CancelCauseFunc
	done    chan struct{} // closed when the goroutine returns
	settled chan struct{} // closed when it has returned or been abandoned
	settle  sync.Once

	mu       sync.Mutex
	stopping bool
}

func newDaemon(s *Set, h *handling.Spawning) *daemon {
	ctx, cancel := context.WithCancelCause(s.m.base)
	return &daemon{
		set: s, h: h, stopper: handling.NewStopper(), ctx: ctx, cancel: cancel,
		done: make(chan struct{}), settled: make(chan struct{}),
	}
}

func (d *daemon) start() { go d.run() }

func (d *daemon) isSettled() bool {
	select {
	case <-d.settled:
		return true
	default:
		return false
	}
}

func (d *daemon) markSettled() {
	d.settle.Do(func() {
		close(d.settled)
		d.set.m.untrack(d)
	})
}

func (d *daemon) clock() time.Time { return d.set.m.cfg.Clock.Now() }

// run is the daemon's goroutine: its initial delay, then the daemon's or the
// timer's loop, then the bookkeeping of its exit.
func (d *daemon) run() {
	defer close(d.done)
	defer func() {
		onItsOwn := !d.stopper.Stopped()
		d.stopper.Stop(errExited) // wakes anything still waiting on it
		d.cancel(errExited)
		d.set.exited(d, onItsOwn)
		d.markSettled()
		d.set.obj.Wake()
	}()
	if !d.initialDelay() {
		return
	}
	if d.h.Kind == handling.KindTimer {
		d.runTimer()
	} else {
		d.runDaemon()
	}
	log := d.set.obj.Logger
	if d.stopper.Stopped() {
		log.Debug(fmt.Sprintf("%s has exited on request and will not be retried or restarted.", d.h.Title()))
	} else {
		log.Debug(fmt.Sprintf("%s has exited on its own and will not be retried or restarted.", d.h.Title()))
	}
}

// errExited is the stop reason left behind by a daemon that has returned.
var errExited = errors.New("the daemon has exited")

// sleep waits for dur unless the daemon is asked to stop first; it reports
// whether it slept the whole time.
func (d *daemon) sleep(dur time.Duration) bool {
	if d.stopper.Stopped() {
		return false
	}
	if dur <= 0 {
		return true
	}
	t := d.set.m.cfg.Clock.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C():
		return !d.stopper.Stopped()
	case <-d.stopper.Stopping():
		return false
	}
}

func (d *daemon) initialDelay() bool {
	delay := d.h.InitialDelay
	if d.h.InitialDelayFunc != nil {
		p := &patch.Patch{}
		delay = d.h.InitialDelayFunc(d.arg(p, handlers.Attempt{}))
	}
	return d.sleep(delay)
}

// runDaemon invokes the daemon until it returns or fails for good, retrying
// errors after their delays (compat: daemons-errors): a daemon is a long-running handler,
// and its retries are in memory only.
func (d *daemon) runDaemon() {
	var st attempts
	for !d.stopper.Stopped() {
		v := d.attempt(&st)
		if v.Done || !d.sleep(v.Delay) {
			return
		}
	}
}

// runTimer fires the timer on its schedule until it is stopped or fails
// permanently (compat: timers). Invocations never overlap: the next one is
// scheduled only after the previous one has returned.
func (d *daemon) runTimer() {
	sch := timers.Schedule{Interval: d.h.Interval, Idle: d.h.Idle, Sharp: d.h.Sharp}
	var st attempts
	for !d.stopper.Stopped() {
		for left := sch.IdleLeft(d.set.changes.Last(), d.clock()); left > 0; left = sch.IdleLeft(d.set.changes.Last(), d.clock()) {
			if !d.sleep(left) {
				return
			}
		}
		started := d.clock()
		v := d.attempt(&st)
		switch {
		case v.Failed:
			// The manual: a permanent error stops the timer for good.
			return
		case !v.Done:
			// Errors override the schedule: the retry comes after the
			// error's delay, not the interval (compat: timers-errors).
			if !d.sleep(v.Delay) {
				return
			}
			continue
		}
		st = attempts{} // retries count afresh after a success
		delay, next := sch.AfterSuccess(started, d.clock())
		switch next {
		case timers.Sleep:
			if !d.sleep(delay) {
				return
			}
		case timers.AwaitChange:
			for !d.set.changes.Last().After(started) {
				if !d.sleep(d.h.Idle) {
					return
				}
			}
		case timers.Once:
			return
		}
	}
}

// attempts is the in-memory progress of a daemon or timer: Kopf keeps no
// records on the object for them.
type attempts struct {
	retries int
	started time.Time
}

// attempt invokes the handler once, delivers its result and sends its patch
// (compat: daemons-results, daemons-patch), and returns what the outcome means.
func (d *daemon) attempt(st *attempts) handling.Verdict {
	h, log := d.h, d.set.obj.Logger
	now := d.clock()
	if st.started.IsZero() {
		st.started = now
	}
	runtime := now.Sub(st.started)
	title := h.Title()
	log.Debug(title + " is invoked.") // as Kopf, before the checks of timeouts and retries
	if v, expired := handling.Expired(&h.Handler, title, st.retries, runtime); expired {
		v.Log(log)
		return v
	}

	p := &patch.Patch{}
	arg := d.arg(p, handlers.Attempt{Retry: st.retries, Started: st.started, Runtime: runtime})
	ctx := d.ctx
	if h.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, st.started.Add(h.Timeout))
		defer cancel()
	}
	result, err := h.Call(ctx, arg)
	if err != nil && d.stopper.Stopped() && d.isStopError(err) {
		err = nil // it was asked to stop, and says so
	}
	if observe := d.set.obj.Observe; observe != nil {
		observe(h.ID, strings.ToLower(h.Kind.String()), err, st.retries, d.clock().Sub(now))
	}
	st.retries++
	if err == nil && result != nil {
		if derr := handling.DeliverResult(p, h.ID, result); derr != nil {
			err = &handlers.PermanentError{Err: fmt.Errorf("its result cannot be stored in status: %w", derr)}
		}
	}
	v := handling.Judge(&h.Handler, title, err, st.retries, runtime, d.set.m.cfg.DefaultBackoff)
	v.Log(log)
	if !p.IsEmpty() {
		if err := d.apply(p); err != nil {
			log.Warn(fmt.Sprintf("%s could not patch the object: %v", title, err))
		}
	}
	return v
}

// isStopError tells whether an error is only the daemon's report of being
// stopped: its ctx's error or cause, which is no failure.
func (d *daemon) isStopError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, d.stopper.Reason()) || errors.Is(err, context.Cause(d.ctx))
}

func (d *daemon) arg(p *patch.Patch, att handlers.Attempt) *handlers.Spawn {
	o := d.set.obj
	body, ok := o.Live()
	if !ok || body == nil {
		body = map[string]any{}
	}
	obj := handlers.NewObject(body, o.Resource, p, o.Logger)
	obj.Memo, obj.Param = o.Memo, d.h.Param
	return handlers.NewSpawn(obj, att, handlers.SpawnEnv{
		Stopper: d.stopper, Clock: d.set.m.cfg.Clock, Live: o.Live, Apply: d.applyCtx,
	})
}

func (d *daemon) apply(p *patch.Patch) error { return d.applyCtx(d.ctx, p) }

// applyCtx sends a patch even when ctx is cancelled by a stop: the
// daemon's last patch is part of its exit.
func (d *daemon) applyCtx(ctx context.Context, p *patch.Patch) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), applyTimeout)
	defer cancel()
	return d.set.obj.Apply(ctx, p)
}

// stop asks the daemon to stop and starts watching its exit; it reports
// whether this call did (a daemon is stopped once, for the first reason).
func (d *daemon) stop(reason error) bool {
	d.mu.Lock()
	if d.stopping || d.isSettled() {
		d.mu.Unlock()
		return false
	}
	d.stopping = true
	d.mu.Unlock()
	if d.backoff() > 0 {
		d.stopper.Stop(reason)
	} else {
		// No grace period: the ctx is cancelled with the flag, so that a
		// daemon seeing either sees the other, and the reason.
		d.stopper.StopWith(reason, func() { d.cancel(reason) })
	}
	m := d.set.m
	m.wg.Go(func() { d.watchStop(reason) })
	return true
}

// backoff is the daemon's CancellationBackoff; timers have none.
func (d *daemon) backoff() time.Duration {
	if d.h.Kind == handling.KindTimer {
		return 0
	}
	return d.h.CancellationBackoff
}

// watchStop runs Kopf's termination stages for a daemon asked to stop
// (compat: daemons-stopping): a graceful CancellationBackoff with only the Stopped flag set,
// then the ctx cancelled, then either CancellationTimeout and abandonment,
// or polling for as long as it takes. At the operator's exit, polling ends
// after Background.ExitTimeout with abandonment too (compat: daemons-exit).
func (d *daemon) watchStop(reason error) {
	var (
		h, log  = d.h, d.set.obj.Logger
		cfg     = d.set.m.cfg
		title   = h.Title()
		backoff = d.backoff()
		timeout = h.CancellationTimeout
		polling = h.CancellationPolling
	)
	if h.Kind == handling.KindTimer {
		timeout, polling = 0, 0 // Kopf's timers have no such options
	}
	if polling <= 0 {
		polling = cfg.Background.CancellationPolling
	}
	wait := func(dur time.Duration, exiting <-chan struct{}) (exited, exitBegun bool) {
		t := cfg.Clock.NewTimer(dur)
		defer t.Stop()
		select {
		case <-d.done:
			return true, false
		case <-t.C():
			return false, false
		case <-exiting:
			return false, true
		}
	}
	if backoff > 0 {
		log.Debug(fmt.Sprintf("%s is signalled to exit gracefully.", title))
		if exited, _ := wait(backoff, nil); exited {
			return
		}
	}
	d.cancel(reason)
	if backoff > 0 || timeout > 0 {
		select {
		case <-d.done:
			return
		default:
			log.Debug(fmt.Sprintf("%s is signalled to exit by force.", title))
		}
	}
	if timeout > 0 {
		if exited, _ := wait(timeout, nil); !exited {
			d.abandon()
		}
		return
	}
	exiting := d.set.m.exitCh
	for {
		exited, exitBegun := false, false
		select {
		case <-exiting:
			exitBegun = true
		default:
			exited, exitBegun = wait(polling, exiting)
		}
		switch {
		case exited:
			return
		case exitBegun:
			if exited, _ := wait(cfg.Background.ExitTimeout, nil); !exited {
				d.abandon()
			}
			return
		}
		log.Debug(fmt.Sprintf("%s is still exiting. The next check is in %g seconds.", title, polling.Seconds()))
	}
}

// abandon gives up on a daemon that does not exit: it is reported, and no
// longer holds its object or the operator's exit. Its goroutine runs on
// until it returns by itself; it is still counted as running, so that it is
// not spawned a second time.
func (d *daemon) abandon() {
	d.set.obj.Logger.Warn(fmt.Sprintf("%s did not exit in time. Leaving it orphaned.", d.h.Title()))
	d.markSettled()
	d.set.obj.Wake()
}
