package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/kopfgo/kopfgo/internal/testlog"
)

// rig is a gate on a fake clock, with its log and what it observed.
type rig struct {
	t   *testing.T
	clk *testclock.FakeClock
	g   *Gate
	log *testlog.Buffer
	obs *recorder
}

func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	r := &rig{t: t, clk: testclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), log: &testlog.Buffer{}, obs: &recorder{}}
	cfg.Clock, cfg.Observer = r.clk, r.obs
	cfg.Logger = slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r.g = New(cfg)
	return r
}

// now lets a request through, failing the test if it would have to wait.
func (r *rig) now(c Class) ticket {
	r.t.Helper()
	r.g.mu.Lock()
	tk, ok := r.g.tryLocked(c, r.clk.Now())
	r.g.mu.Unlock()
	if !ok {
		r.t.Fatalf("a %s request would wait, want it let through at once (%+v)", c, r.g.Stats())
	}
	return tk
}

// blocked fails the test unless a request of class c would wait.
func (r *rig) blocked(c Class) {
	r.t.Helper()
	r.g.mu.Lock()
	_, ok := r.g.tryLocked(c, r.clk.Now())
	r.g.mu.Unlock()
	if ok {
		r.t.Fatalf("a %s request was let through, want it to wait", c)
	}
}

type result struct {
	tk  ticket
	err error
}

// queue starts a request that must wait, and returns once it waits in line.
func (r *rig) queue(ctx context.Context, c Class) <-chan result {
	r.t.Helper()
	waited := func() uint64 {
		r.g.mu.Lock()
		defer r.g.mu.Unlock()
		return r.g.classes[c].waited
	}
	before := waited()
	ch := make(chan result, 1)
	go func() {
		tk, err := r.g.acquire(ctx, c)
		ch <- result{tk, err}
	}()
	for waited() == before {
		select {
		case res := <-ch:
			r.t.Fatalf("a %s request was let through at once (%v), want it to wait", c, res.err)
		default:
			runtime.Gosched()
		}
	}
	return ch
}

// granted waits for a queued request to be let through.
func (r *rig) granted(ch <-chan result) ticket {
	r.t.Helper()
	res := <-ch
	if res.err != nil {
		r.t.Fatalf("a queued request failed: %v", res.err)
	}
	return res.tk
}

// finish ends a request that took rtt.
func (r *rig) finish(tk ticket, rtt time.Duration, o outcome) {
	tk.start = r.clk.Now().Add(-rtt)
	r.g.done(tk, o)
}

func (r *rig) waiting(c Class) int { return r.g.Stats().Of(c).Waiting }

type recorder struct {
	mu       sync.Mutex
	waited   []time.Duration
	rejected []string
}

func (o *recorder) Waited(_ Class, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.waited = append(o.waited, d)
}

func (o *recorder) Rejected(c Class, code int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rejected = append(o.rejected, fmt.Sprintf("%s %d", c, code))
}

func (o *recorder) snapshot() ([]time.Duration, []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.waited), slices.Clone(o.rejected)
}

var (
	ok          = outcome{kind: succeeded}
	refused     = outcome{kind: unreachable, err: errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")}
	unavailable = outcome{kind: overloaded, code: 503, status: "503 Service Unavailable"}
)

func TestLimitGrowsWhileLatencyHolds(t *testing.T) {
	r := newRig(t, Config{Writes: Limits{Initial: 4, Max: 12}})
	limits := []int{r.g.WriteLimit()}
	for range 12 {
		n := r.g.WriteLimit()
		tks := make([]ticket, n)
		for i := range tks {
			tks[i] = r.now(Write)
		}
		r.blocked(Write) // the limit is a limit
		for _, tk := range tks {
			r.finish(tk, 10*time.Millisecond, ok)
		}
		r.clk.Step(time.Second)
		limits = append(limits, r.g.WriteLimit())
	}
	for i := 1; i < len(limits); i++ {
		if limits[i] < limits[i-1] || (limits[i] == limits[i-1] && limits[i] < 12) {
			t.Fatalf("limits %v: want growth every round up to 12", limits)
		}
	}
	if last := limits[len(limits)-1]; last != 12 {
		t.Errorf("limits %v: want 12 at the end", limits)
	}
}

func TestUnusedLimitDoesNotGrow(t *testing.T) {
	r := newRig(t, Config{Writes: Limits{Initial: 16, Max: 64}})
	for range 100 {
		r.finish(r.now(Write), 10*time.Millisecond, ok) // one at a time
	}
	if got := r.g.WriteLimit(); got != 16 {
		t.Errorf("limit %d after 100 lone requests, want 16 (untested by them)", got)
	}
}

func TestLimitBacksOffOncePerRound(t *testing.T) {
	timeout := outcome{kind: timedOut, err: context.DeadlineExceeded}
	for _, tc := range []struct {
		name string
		o    outcome
		want []int // the limit after two failures of the first round, then one of the next
	}{
		{"500", outcome{kind: overloaded, code: 500}, []int{8, 4}},
		{"502", outcome{kind: overloaded, code: 502}, []int{8, 4}},
		{"503", unavailable, []int{8, 4}},
		{"504", outcome{kind: overloaded, code: 504}, []int{8, 4}},
		{"429 without Retry-After", outcome{kind: overloaded, code: 429}, []int{8, 4}},
		{"429 with Retry-After", outcome{kind: steered, code: 429, retryAfter: time.Second}, []int{8, 4}},
		{"client-side timeout", timeout, []int{8, 4}},
		{"connection refused", refused, []int{16, 16}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Config{Writes: Limits{Initial: 16, Max: 16}})
			var round []ticket
			for range 16 {
				round = append(round, r.now(Write))
			}
			r.finish(round[0], time.Millisecond, tc.o)
			r.finish(round[1], time.Millisecond, tc.o)
			got := []int{r.g.Stats().Writes.Limit}
			r.clk.Step(time.Second) // past any Retry-After
			for _, tk := range round[2:] {
				r.finish(tk, time.Millisecond, ok) // the round ends well
			}
			r.finish(r.now(Write), time.Millisecond, tc.o) // a request of the next round
			got = append(got, r.g.Stats().Writes.Limit)
			if !slices.Equal(got, tc.want) {
				t.Errorf("limits %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLimitBacksOffOnRisingLatency(t *testing.T) {
	r := newRig(t, Config{Writes: Limits{Initial: 10, Max: 16}})
	// The baseline: 5ms, while the limit grows to its maximum.
	var tks []ticket
	for r.g.WriteLimit() < 16 {
		tks = tks[:0]
		for range r.g.WriteLimit() {
			tks = append(tks, r.now(Write))
		}
		for _, tk := range tks {
			r.finish(tk, 5*time.Millisecond, ok)
		}
	}
	// 40ms is 8 times the baseline, but within its slack: no congestion.
	tks = tks[:0]
	for range 16 {
		tks = append(tks, r.now(Write))
	}
	for _, tk := range tks {
		r.finish(tk, 40*time.Millisecond, ok)
	}
	if got := r.g.WriteLimit(); got != 16 {
		t.Fatalf("limit %d at 40ms, want 16", got)
	}
	// 500ms: queueing at the server. Cut once for the round in flight, then
	// again for each later round, but latency alone never below the
	// initial limit: only errors and timeouts go further.
	var limits []int
	for range 5 {
		n := r.g.WriteLimit()
		tks = tks[:0]
		for range n {
			tks = append(tks, r.now(Write))
		}
		for _, tk := range tks {
			r.finish(tk, 500*time.Millisecond, ok)
		}
		limits = append(limits, r.g.WriteLimit())
	}
	if want := []int{14, 12, 11, 10, 10}; !slices.Equal(limits, want) {
		t.Errorf("limits %v under rising latency, want %v", limits, want)
	}
	// Latency is not judged for reads: a LIST takes as long as its collection.
	tk := r.now(Read)
	r.finish(tk, 30*time.Second, ok)
	if got := r.g.Stats().Reads.Limit; got != 16 {
		t.Errorf("read limit %d after a slow read, want 16", got)
	}
}

// A latency that rose and then holds is the server's pace at this load,
// not congestion: once the long-term latency has caught up with it, the
// limit grows again (a backlog drains faster with more requests in flight
// though each takes longer), while a further rise still cuts it.
func TestLimitGrowsAgainOnALatencyPlateau(t *testing.T) {
	r := newRig(t, Config{Writes: Limits{Initial: 16, Max: 64}})
	round := func(rtt time.Duration) int {
		n := r.g.WriteLimit()
		tks := make([]ticket, 0, n)
		for range n {
			tks = append(tks, r.now(Write))
		}
		for _, tk := range tks {
			r.finish(tk, rtt, ok)
		}
		return r.g.WriteLimit()
	}
	for range 40 {
		round(5 * time.Millisecond)
	}
	start := r.g.WriteLimit()
	// 200ms at once: a rise, cut down to (not below) the initial limit.
	low := start
	for range 10 {
		low = min(low, round(200*time.Millisecond))
	}
	if low >= start || low < 16 {
		t.Fatalf("limit %d after a rise from 5ms to 200ms (was %d), want cut, to no less than 16", low, start)
	}
	// The plateau: 200ms goes on; the limit grows back.
	var high int
	for range 200 {
		high = max(high, round(200*time.Millisecond))
	}
	if high <= low {
		t.Errorf("limit %d after a long plateau of 200ms, want it grown again beyond %d", high, low)
	}
}

func TestRetryAfterHoldsTheClassUntilThen(t *testing.T) {
	r := newRig(t, Config{})
	r.finish(r.now(Write), time.Millisecond, outcome{kind: steered, code: 429, status: "429 Too Many Requests", retryAfter: 2 * time.Second})
	r.blocked(Write)
	r.finish(r.now(Read), time.Millisecond, ok) // the other class goes on
	ctx := context.Background()
	first, second := r.queue(ctx, Write), r.queue(ctx, Write)

	r.clk.Step(2*time.Second - time.Nanosecond)
	if n := r.waiting(Write); n != 2 {
		t.Fatalf("%d writes waiting just before Retry-After ends, want 2", n)
	}
	r.clk.Step(time.Nanosecond)
	r.granted(first)
	r.granted(second)
	// client-go's own retry of the 429 slept Retry-After from the response
	// on: it arrives now and goes at once, not after a second wait.
	r.now(Write)
	waited, rejected := r.obs.snapshot()
	if !slices.Equal(waited, []time.Duration{2 * time.Second, 2 * time.Second}) {
		t.Errorf("waits observed %v, want two of 2s", waited)
	}
	if !slices.Equal(rejected, []string{"write 429"}) {
		t.Errorf("rejections observed %v, want one write 429", rejected)
	}
	if r.g.Stats().Unavailable {
		t.Error("a 429 with Retry-After made the server unavailable; it steers, it does not fail")
	}
}

func TestOutageLetsOneProbeThroughAtATime(t *testing.T) {
	r := newRig(t, Config{Host: "https://api.example:6443"})
	for range 2 {
		r.finish(r.now(Write), time.Millisecond, refused)
	}
	if r.g.Stats().Unavailable {
		t.Fatal("unavailable after two failures, want three")
	}
	r.finish(r.now(Read), time.Millisecond, refused)
	if !r.g.Stats().Unavailable {
		t.Fatal("available after three failures in a row")
	}
	if got := r.g.WriteLimit(); got != 1 {
		t.Errorf("write limit %d while unavailable, want 1", got)
	}
	ctx := context.Background()
	w1 := r.queue(ctx, Write)
	rd := r.queue(ctx, Read)
	w2 := r.queue(ctx, Write)

	r.clk.Step(firstProbe - time.Millisecond)
	if n := r.waiting(Write) + r.waiting(Read); n != 3 {
		t.Fatalf("%d requests waiting before the first probe, want 3", n)
	}
	r.clk.Step(time.Millisecond)
	probe := r.granted(w1) // the oldest
	if !probe.probe {
		t.Fatal("the first request let through during the outage is no probe")
	}
	r.clk.Step(time.Minute) // the probe hangs: nobody else goes meanwhile
	if n := r.waiting(Write) + r.waiting(Read); n != 2 {
		t.Fatalf("%d requests waiting while a probe is in flight, want 2", n)
	}
	r.finish(probe, time.Minute, outcome{kind: timedOut, err: context.DeadlineExceeded})

	r.clk.Step(2*firstProbe - time.Millisecond) // the backoff doubles
	if n := r.waiting(Write) + r.waiting(Read); n != 2 {
		t.Fatalf("%d requests waiting before the second probe, want 2", n)
	}
	r.clk.Step(time.Millisecond)
	probe = r.granted(rd)
	r.finish(probe, 3*time.Millisecond, ok)
	r.granted(w2) // reopened
	if r.g.Stats().Unavailable {
		t.Fatal("unavailable after a probe succeeded")
	}
	if got := r.g.WriteLimit(); got != 1 {
		t.Errorf("write limit %d on reopening, want 1 (restarting low)", got)
	}

	lines := strings.Split(strings.TrimSpace(r.log.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("log:\n%s\nwant two lines: one when the server goes, one when it is back", r.log)
	}
	for i, want := range []string{
		`level=WARN msg="The API server at https://api.example:6443 is unreachable: dial tcp 127.0.0.1:6443: connect: connection refused; requests wait`,
		`level=INFO msg="The API server at https://api.example:6443 is back after 1m1.5s: 3 requests waited for it, 4 failed."`,
	} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d: %s\nwant it to contain %s", i, lines[i], want)
		}
	}
}

// A server shutting down refuses new connections but still answers the
// requests it has: those answers come after the outage began and must not
// end it, or the log tells two outages for one. Likewise a watch sent while
// the server was away that fails after it is back starts no new outage.
func TestOutcomesOfEarlierRequestsTellNothingOfTheOutage(t *testing.T) {
	r := newRig(t, Config{Host: "https://api"})
	var inFlight []ticket
	for range 3 {
		inFlight = append(inFlight, r.now(Write))
	}
	for range downAfter {
		r.finish(r.now(Read), time.Millisecond, refused)
	}
	if !r.g.Stats().Unavailable {
		t.Fatal("available after three failures in a row")
	}
	for _, tk := range inFlight { // the draining server answers them
		r.finish(tk, time.Second, ok)
	}
	if !r.g.Stats().Unavailable {
		t.Fatal("answers to requests sent before the outage ended it")
	}
	watchSentDuring := r.g.episode.Load()
	r.g.observe(watchSentDuring, refused)

	r.clk.Step(firstProbe)
	r.finish(r.now(Read), time.Millisecond, ok) // the probe

	if r.g.Stats().Unavailable {
		t.Fatal("unavailable after a probe succeeded")
	}
	for range downAfter {
		r.g.observe(watchSentDuring, refused)
	}
	if r.g.Stats().Unavailable {
		t.Fatal("failures of watches sent during the outage started another")
	}
	if n := strings.Count(r.log.String(), "\n"); n != 2 {
		t.Errorf("log:\n%s\nwant two lines: one outage, one recovery", r.log)
	}
}

func TestLimitGrowsBackAfterAnOutage(t *testing.T) {
	r := newRig(t, Config{Writes: Limits{Initial: 8, Max: 8}})
	for range downAfter {
		r.finish(r.now(Write), time.Millisecond, unavailable)
	}
	r.clk.Step(firstProbe)
	r.finish(r.now(Write), time.Millisecond, ok)
	var limits []int
	for r.g.WriteLimit() < 8 && len(limits) < 10 {
		var tks []ticket
		for range r.g.WriteLimit() {
			tks = append(tks, r.now(Write))
		}
		for _, tk := range tks {
			r.finish(tk, time.Millisecond, ok)
		}
		limits = append(limits, r.g.WriteLimit())
	}
	if want := []int{3, 5, 7, 8}; !slices.Equal(limits, want) {
		t.Errorf("limits after reopening %v, want slow start %v", limits, want)
	}
	if !strings.Contains(r.log.String(), "is overloaded: 503 Service Unavailable;") {
		t.Errorf("log:\n%s\nwant the server called overloaded by a 503", r.log)
	}
}

func TestReadsAreNotStarvedByWrites(t *testing.T) {
	r := newRig(t, Config{Writes: Limits{Initial: 2, Max: 2}, Reads: Limits{Initial: 4, Max: 4}})
	w1, w2 := r.now(Write), r.now(Write)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var queued []<-chan result
	for range 5 {
		queued = append(queued, r.queue(ctx, Write))
	}
	for range 4 {
		r.now(Read)
	}
	r.blocked(Read) // the reads' own limit
	r.finish(w1, time.Millisecond, ok)
	r.finish(w2, time.Millisecond, ok)
	r.granted(queued[0])
	r.granted(queued[1])
	cancel()
	for _, ch := range queued[2:] {
		if res := <-ch; !errors.Is(res.err, context.Canceled) {
			t.Errorf("a cancelled wait returned %v, want context.Canceled", res.err)
		}
	}
}

func TestWaitingHonoursTheContext(t *testing.T) {
	r := newRig(t, Config{Writes: Limits{Initial: 1, Max: 1}})
	busy := r.now(Write)
	ctx, cancel := context.WithCancelCause(context.Background())
	gone := r.queue(ctx, Write)
	next := r.queue(context.Background(), Write)
	stop := errors.New("the pass was cancelled")
	cancel(stop)
	if res := <-gone; !errors.Is(res.err, stop) {
		t.Fatalf("a cancelled wait returned %v, want its context's cause", res.err)
	}
	if n := r.waiting(Write); n != 1 {
		t.Fatalf("%d writes waiting after one gave up, want 1", n)
	}
	r.finish(busy, time.Millisecond, ok)
	r.granted(next) // the one behind the cancelled request gets the slot
	if s := r.g.Stats().Writes; s.InFlight != 1 || s.Waiting != 0 {
		t.Errorf("writes %+v, want 1 in flight and none waiting", s)
	}
}

func TestWatchesTellOutagesAndRecoveries(t *testing.T) {
	r := newRig(t, Config{Host: "https://api"})
	for range downAfter {
		r.g.observe(r.g.episode.Load(), refused)
	}
	if !r.g.Stats().Unavailable {
		t.Fatal("failing watches did not tell an outage")
	}
	r.g.observe(r.g.episode.Load(), ok)
	if r.g.Stats().Unavailable {
		t.Fatal("a watch that connects did not end the outage")
	}
	if n := strings.Count(r.log.String(), "\n"); n != 2 {
		t.Errorf("log:\n%s\nwant two lines", r.log)
	}
}

func TestNilGateLetsEverythingThrough(t *testing.T) {
	var g *Gate
	if got := g.WriteLimit(); got != 0 {
		t.Errorf("nil gate's write limit %d, want 0 (none)", got)
	}
	if got := g.Stats(); got != (Stats{}) {
		t.Errorf("nil gate's stats %+v, want zero", got)
	}
	if rt := g.Wrap(http.DefaultTransport); rt != http.DefaultTransport {
		t.Error("a nil gate wrapped the transport")
	}
}

func TestDefaults(t *testing.T) {
	g := New(Config{Writes: Limits{Max: 4}})
	if s := g.Stats(); s.Writes.Limit != 4 || s.Reads.Limit != 16 {
		t.Errorf("limits %+v, want writes 4 (the max under the default 16) and reads 16", s)
	}
}
