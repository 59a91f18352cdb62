package flowcontrol

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// Class is a kind of request with a limit of its own.
type Class uint8

// The classes: Write for POST, PUT, PATCH and DELETE; Read for GET and LIST
// (watches are not gated).
const (
	Write Class = iota
	Read
	numClasses
)

// String names the class as the metrics' label does.
func (c Class) String() string {
	if c == Write {
		return "write"
	}
	return "read"
}

// The default limits of each class: 16 is what a plain client-go
// controller's workers send at most; 32 leaves room to grow against a
// server that answers quickly, well under kube-apiserver's own defaults
// (--max-mutating-requests-inflight 200, --max-requests-inflight 400).
//
// The maximum was 64 until measured against an API server that queues
// (API Priority and Fairness with few seats, the bench's backlog-shed): the
// latency rule accepts a latency that rose and holds, so the limit climbed
// to 64 while the server's queue held up to 60 of its requests, and the
// server spent 70 s of CPU on a 10 000-object backlog instead of 56 s at a
// limit of 16, draining it 1.22x slower than a bare client-go program with
// 16 workers. At 32 both backlog variants drained at the bare program's
// pace (1.01x against the queueing server, 0.98x against a plain one),
// which 16 did not always (1.06x against a plain one): docs/performance.md
// has the runs.
const (
	DefaultInitial = 16
	DefaultMax     = 32
)

// Limits bound the requests of one class in flight.
type Limits struct {
	// Initial is where the limit starts. Default DefaultInitial, at most Max.
	Initial int
	// Max is the most the limit grows to. Default DefaultMax.
	Max int
}

// WithDefaults fills in the defaults of unset (non-positive) limits.
func (l Limits) WithDefaults() Limits {
	if l.Max <= 0 {
		l.Max = DefaultMax
	}
	if l.Initial <= 0 {
		l.Initial = min(DefaultInitial, l.Max)
	}
	l.Initial = min(l.Initial, l.Max)
	return l
}

// Observer is told what the gate does, for metrics; its methods must be
// cheap. They are called only for requests that waited or were rejected.
type Observer interface {
	// Waited: a request of the class waited d at the gate.
	Waited(class Class, d time.Duration)
	// Rejected: the API server answered a request of the class with code
	// (429 or 5xx).
	Rejected(class Class, code int)
}

// Config makes a Gate.
type Config struct {
	// Host names the API server in the log.
	Host   string
	Writes Limits
	Reads  Limits
	// Clock: nil is the real clock.
	Clock clock.Clock
	// Logger gets the outage's two lines; nil logs nothing.
	Logger *slog.Logger
	// Observer: nil observes nothing.
	Observer Observer
}

// The tuning: constants, not settings, so that the gate behaves the same
// everywhere; doc.go says why each is what it is.
const (
	downAfter        = 3
	errorCut         = 0.5
	latencyCut       = 0.9
	latencyTolerance = 1.5
	latencySlack     = 50 * time.Millisecond
	longWeight       = 512
	firstProbe       = 500 * time.Millisecond
	maxProbe         = 8 * time.Second
)

// Gate is the flow control of one API server. Its methods are safe for
// concurrent use, and on a nil *Gate (no flow control).
type Gate struct {
	host     string
	clk      clock.Clock
	logger   *slog.Logger
	observer Observer
	// born is when the gate was made: the start of a request that
	// goes at once is born plus the clock's Since, which reads the
	// monotonic clock alone (half the cost of Now, on every write).
	born time.Time

	mu      sync.Mutex
	classes [numClasses]class
	// seq numbers the requests let through, so that a decrease is caused
	// only by requests started after the previous one.
	seq uint64
	// queued numbers the requests that wait, to find the oldest across
	// classes (their clock times may be equal).
	queued uint64
	// streak counts failures since the last success.
	streak int
	// out is the outage under way; nil while the server answers.
	out *outage
	// episode numbers the server's states: it moves on when an outage
	// starts and when it ends. A request's outcome tells about the episode
	// it was sent in, not a later one: an answer to a request sent before
	// an outage began (the server drains its requests in flight when it
	// shuts down) does not end the outage, and a failure of a request sent
	// during it does not count toward the next. Written under mu; read
	// without it by ungated requests.
	episode atomic.Uint64
}

type outage struct {
	since   time.Time
	probing bool // a probe is in flight
	probeAt time.Time
	backoff time.Duration
	// overloaded: the failures were answers (5xx, 429) or timeouts rather
	// than refused or reset connections.
	overloaded bool
	first      string
	waited     int
	failed     int
}

// New makes a gate; it starts nothing.
func New(cfg Config) *Gate {
	g := &Gate{host: cfg.Host, clk: cfg.Clock, logger: cfg.Logger, observer: cfg.Observer}
	if g.clk == nil {
		g.clk = clock.RealClock{}
	}
	g.born = g.clk.Now()
	g.classes[Write] = newClass(cfg.Writes.WithDefaults(), true)
	g.classes[Read] = newClass(cfg.Reads.WithDefaults(), false)
	return g
}

// Stats are the gate's figures of the moment.
type Stats struct {
	Writes, Reads ClassStats
	// Unavailable: the API server is unreachable or overloaded, and one
	// probe at a time is let through.
	Unavailable bool
	// Waited counts the requests that have waited at the gate, since New.
	Waited uint64
}

// ClassStats are one class's figures.
type ClassStats struct {
	Limit    int // requests allowed in flight now
	InFlight int
	Waiting  int
}

// Of returns the figures of a class.
func (s Stats) Of(c Class) ClassStats {
	if c == Write {
		return s.Writes
	}
	return s.Reads
}

// Stats returns the current figures; a nil gate's are all zero.
func (g *Gate) Stats() Stats {
	if g == nil {
		return Stats{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	one := func(c Class) ClassStats {
		cs := &g.classes[c]
		return ClassStats{Limit: g.limitLocked(c), InFlight: cs.inFlight, Waiting: cs.waiting}
	}
	return Stats{Writes: one(Write), Reads: one(Read), Unavailable: g.out != nil, Waited: g.totalWaited()}
}

func (g *Gate) totalWaited() uint64 { return g.classes[Write].waited + g.classes[Read].waited }

// WriteLimit is how many writes may be in flight now: 1 while the server is
// unavailable (one probe). 0 means no limit (a nil gate): work paced by the
// gate's limit, such as the passes of objects, follows this.
func (g *Gate) WriteLimit() int {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.limitLocked(Write)
}

func (g *Gate) limitLocked(c Class) int {
	if g.out != nil {
		return 1
	}
	return g.classes[c].cap()
}

// ticket is a request let through.
type ticket struct {
	class   Class
	probe   bool
	seq     uint64
	episode uint64
	start   time.Time
}

// waiter is a request waiting in line.
type waiter struct {
	since time.Time
	order uint64
	// wake is signalled when the waiter is granted or given a timer.
	wake    chan struct{}
	granted bool
	gone    bool // its context ended before it was granted
	ticket  ticket
	timer   clock.Timer
	timerAt time.Time
}

// acquire waits until a request of class c may go, or ctx ends.
func (g *Gate) acquire(ctx context.Context, c Class) (ticket, error) {
	g.mu.Lock()
	if t, ok := g.freeLocked(c); ok {
		g.mu.Unlock()
		if g.classes[c].judgeLatency {
			t.start = g.born.Add(g.clk.Since(g.born))
		}
		return t, nil
	}
	now := g.clk.Now()
	if t, ok := g.tryLocked(c, now); ok {
		g.mu.Unlock()
		return t, nil
	}
	cs := &g.classes[c]
	g.queued++
	w := &waiter{since: now, order: g.queued, wake: make(chan struct{}, 1)}
	w.ticket.class = c
	cs.push(w)
	cs.waited++
	if g.out != nil {
		g.out.waited++
	}
	g.dispatchLocked(now)
	for {
		if w.granted {
			g.mu.Unlock()
			if g.observer != nil {
				g.observer.Waited(c, w.ticket.start.Sub(w.since))
			}
			return w.ticket, nil
		}
		var tick <-chan time.Time
		if w.timer != nil {
			tick = w.timer.C()
		}
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			g.mu.Lock()
			if w.granted {
				g.releaseLocked(w.ticket)
			} else {
				w.gone = true
				cs.waiting--
				g.stopTimer(w)
			}
			g.dispatchLocked(g.clk.Now())
			g.mu.Unlock()
			return ticket{}, fmt.Errorf("waiting for the API server's flow control to let the request through: %w", context.Cause(ctx))
		case <-w.wake:
			g.mu.Lock()
		case <-tick:
			g.mu.Lock()
			if w.timer != nil && w.timer.C() == tick {
				w.timer = nil
			}
			g.dispatchLocked(g.clk.Now())
		}
	}
}

// freeLocked lets a request of class c go, as tryLocked does, where that
// takes no clock: the server answers, no Retry-After holds the class, it
// has a free slot and nobody waits. Most requests go so, and reading the
// clock was most of the gate's cost; the ticket's start is left for the
// caller to read outside the lock, where the class judges latency.
func (g *Gate) freeLocked(c Class) (ticket, bool) {
	cs := &g.classes[c]
	if g.out != nil || !cs.closedUntil.IsZero() || cs.waiting > 0 || cs.inFlight >= cs.cap() {
		return ticket{}, false
	}
	return g.letLocked(c, time.Time{}, false), true
}

// tryLocked lets a request of class c go if it may go at once: its class
// is open and has a free slot, and nobody waits before it.
func (g *Gate) tryLocked(c Class, now time.Time) (ticket, bool) {
	open, probe := g.openLocked(c, now)
	if !open || g.classes[c].waiting > 0 || (probe && !g.nobodyWaitsLocked()) {
		return ticket{}, false
	}
	return g.letLocked(c, now, probe), true
}

// openLocked says whether a request of class c may go now, and whether it
// goes as the outage's probe.
func (g *Gate) openLocked(c Class, now time.Time) (open, probe bool) {
	cs := &g.classes[c]
	if now.Before(cs.closedUntil) {
		return false, false
	}
	cs.closedUntil = time.Time{} // passed: freeLocked may let the class go again
	if g.out != nil {
		return !g.out.probing && !now.Before(g.out.probeAt), true
	}
	return cs.inFlight < cs.cap(), false
}

func (g *Gate) nobodyWaitsLocked() bool {
	return g.classes[Write].waiting == 0 && g.classes[Read].waiting == 0
}

func (g *Gate) letLocked(c Class, now time.Time, probe bool) ticket {
	g.classes[c].inFlight++
	g.seq++
	if probe {
		g.out.probing = true
	}
	return ticket{class: c, probe: probe, seq: g.seq, episode: g.episode.Load(), start: now}
}

// dispatchLocked lets waiting requests go as far as the limits allow, and
// gives a timer to a request that waits for a time (a Retry-After, the next
// probe) rather than for a slot, so that someone wakes the line then.
func (g *Gate) dispatchLocked(now time.Time) {
	if g.out != nil {
		if g.out.probing {
			return // the probe's end dispatches
		}
		var best *waiter
		for c := range numClasses {
			cs := &g.classes[c]
			h := cs.head()
			if h == nil {
				continue
			}
			if now.Before(cs.closedUntil) {
				g.arm(h, cs.closedUntil, now)
				continue
			}
			if best == nil || h.order < best.order {
				best = h
			}
		}
		if best == nil {
			return
		}
		if now.Before(g.out.probeAt) {
			g.arm(best, g.out.probeAt, now)
			return
		}
		g.grantLocked(best, now, true)
		return
	}
	for c := range numClasses {
		cs := &g.classes[c]
		for {
			h := cs.head()
			if h == nil {
				break
			}
			if now.Before(cs.closedUntil) {
				g.arm(h, cs.closedUntil, now)
				break
			}
			if cs.inFlight >= cs.cap() {
				break
			}
			g.grantLocked(h, now, false)
		}
	}
}

// dispatchWaitingLocked is dispatchLocked, skipped where nobody waits (it
// would let nobody through), so that the end of a request that nobody
// waits behind reads no clock.
func (g *Gate) dispatchWaitingLocked() {
	if !g.nobodyWaitsLocked() {
		g.dispatchLocked(g.clk.Now())
	}
}

func (g *Gate) grantLocked(w *waiter, now time.Time, probe bool) {
	cs := &g.classes[w.ticket.class]
	cs.pop()
	cs.waiting--
	g.stopTimer(w)
	w.ticket = g.letLocked(w.ticket.class, now, probe)
	w.granted = true
	signal(w)
}

// arm gives w a timer that fires at at.
func (g *Gate) arm(w *waiter, at, now time.Time) {
	if w.timer != nil && w.timerAt.Equal(at) {
		return
	}
	g.stopTimer(w)
	w.timer, w.timerAt = g.clk.NewTimer(at.Sub(now)), at
	signal(w)
}

func (g *Gate) stopTimer(w *waiter) {
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

func signal(w *waiter) {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// releaseLocked gives a slot back without judging the request (it was not
// sent, or its caller gave up).
func (g *Gate) releaseLocked(t ticket) {
	g.classes[t.class].inFlight--
	if t.probe && g.out != nil {
		g.out.probing = false
	}
}

// done ends a request let through, judging the server by its outcome.
// A success reads the clock only for its latency, where the class judges
// it, and outside the lock (Since reads the monotonic clock alone).
func (g *Gate) done(t ticket, o outcome) {
	cs := &g.classes[t.class]
	var rtt time.Duration
	if o.kind == succeeded && cs.judgeLatency {
		rtt = g.clk.Since(t.start)
	}
	g.mu.Lock()
	demand := cs.inFlight + cs.waiting
	g.releaseLocked(t)
	var line func()
	switch o.kind {
	case cancelled:
	case succeeded:
		line = g.succeededLocked(t.episode)
		cs.sample(rtt, t.seq, g.seq, demand)
	default:
		now := g.clk.Now()
		if o.kind != unreachable {
			cs.cut(errorCut, t.seq, g.seq)
		}
		if o.retryAfter > 0 {
			cs.closedUntil = later(cs.closedUntil, now.Add(o.retryAfter))
		}
		if o.kind != steered {
			line = g.failedLocked(now, t.episode, t.probe, o)
		}
	}
	g.dispatchWaitingLocked()
	g.mu.Unlock()
	if o.code != 0 && g.observer != nil {
		g.observer.Rejected(t.class, o.code)
	}
	if line != nil {
		line()
	}
}

// observe judges the server by an ungated request's outcome (a watch's),
// sent in the episode given: it can tell an outage and its end, nothing
// about the limits.
func (g *Gate) observe(episode uint64, o outcome) {
	if o.kind == cancelled || o.kind == steered {
		return
	}
	g.mu.Lock()
	var line func()
	if o.kind == succeeded {
		line = g.succeededLocked(episode)
	} else {
		line = g.failedLocked(g.clk.Now(), episode, false, o)
	}
	g.dispatchWaitingLocked()
	g.mu.Unlock()
	if line != nil {
		line()
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// succeededLocked ends the streak of failures and the outage, if any, for
// a request sent in the episode given; it returns the outage's closing
// line. It reads the clock only to end one.
func (g *Gate) succeededLocked(episode uint64) func() {
	if episode != g.episode.Load() {
		return nil // sent before the server's state changed: tells nothing of it
	}
	g.streak = 0
	out := g.out
	if out == nil {
		return nil
	}
	now := g.clk.Now()
	g.out = nil
	g.episode.Add(1)
	for c := range numClasses {
		g.classes[c].restart(g.seq)
	}
	return g.say(slog.LevelInfo, fmt.Sprintf("The API server at %s is back after %s: %d requests waited for it, %d failed.",
		g.host, now.Sub(out.since).Round(time.Millisecond), out.waited, out.failed))
}

// failedLocked counts a failure of a request sent in the episode given;
// the third in a row starts an outage, whose opening line it returns.
func (g *Gate) failedLocked(now time.Time, episode uint64, probe bool, o outcome) func() {
	if episode != g.episode.Load() {
		return nil // sent before the server's state changed: tells nothing of it
	}
	g.streak++
	if out := g.out; out != nil {
		out.failed++
		if probe {
			out.backoff = min(2*out.backoff, maxProbe)
			out.probeAt = now.Add(out.backoff)
		}
		return nil
	}
	if g.streak < downAfter {
		return nil
	}
	out := &outage{since: now, backoff: firstProbe, probeAt: now.Add(firstProbe), failed: g.streak,
		overloaded: o.kind != unreachable, first: o.describe()}
	for c := range numClasses {
		out.waited += g.classes[c].waiting
	}
	g.out = out
	g.episode.Add(1)
	state := "unreachable"
	if out.overloaded {
		state = "overloaded"
	}
	return g.say(slog.LevelWarn, fmt.Sprintf("The API server at %s is %s: %s; requests wait at the operator's flow control, one at a time probing the server, until it answers again.",
		g.host, state, out.first))
}

func (g *Gate) say(level slog.Level, msg string) func() {
	if g.logger == nil {
		return nil
	}
	return func() { g.logger.Log(context.Background(), level, msg) }
}
