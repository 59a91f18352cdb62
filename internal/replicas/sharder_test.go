package replicas

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kopfgo/kopfgo/internal/conventions"
)

// journal is the order of what the replicas and their reactors do.
type journal struct {
	mu    sync.Mutex
	lines []string
	added chan struct{} // closed and replaced on every line
}

func (j *journal) add(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, fmt.Sprintf(format, args...))
	if j.added != nil {
		close(j.added)
		j.added = nil
	}
}

// await waits until line is journalled (the reactors' stand-ins journal
// from their own goroutines).
func (j *journal) await(t *testing.T, line string) {
	t.Helper()
	failure := time.NewTimer(30 * time.Second) // a failure detector
	defer failure.Stop()
	for {
		j.mu.Lock()
		if slices.Contains(j.lines, line) {
			j.mu.Unlock()
			return
		}
		if j.added == nil {
			j.added = make(chan struct{})
		}
		added := j.added
		j.mu.Unlock()
		select {
		case <-added:
		case <-failure.C:
			t.Fatalf("%q is never journalled; journal:\n%s", line, j)
		}
	}
}

func (j *journal) index(line string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Index(j.lines, line)
}

func (j *journal) String() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return strings.Join(j.lines, "\n")
}

// replica is one sharder with a stand-in for its reactor, which journals
// every halt and every change of the shards it would serve.
type replica struct {
	name  string
	s     *Sharder
	pause *Standby
	held  chan []int // what ShardingConfig.Held is told
	// stopping, while locked, holds the stand-in's reports of shards
	// taken out halted: their work is still stopping.
	stopping sync.Mutex
}

type world struct {
	t       *testing.T
	clock   *clocktesting.FakeClock
	clients *fake.Clientset
	j       *journal
	names   []string // names[i], cluster-scoped, is in shard i
	ctx     context.Context
	wg      sync.WaitGroup
	// failing makes lease updates by these identities fail.
	mu      sync.Mutex
	failing map[string]bool
}

const shards = 4

func newWorld(t *testing.T) *world {
	ctx, cancel := context.WithCancel(context.Background())
	w := &world{t: t, clock: clocktesting.NewFakeClock(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)), clients: fake.NewClientset(), j: &journal{}, ctx: ctx, failing: map[string]bool{}}
	t.Cleanup(func() {
		cancel()
		w.wg.Wait()
	})
	w.names = make([]string, shards)
	for n := 0; slices.Contains(w.names, ""); n++ {
		name := fmt.Sprintf("obj-%d", n)
		if i := conventions.Shard("", name, shards); w.names[i] == "" {
			w.names[i] = name
		}
	}
	w.clients.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordv1.Lease)
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		w.mu.Lock()
		fail := w.failing[holder]
		w.mu.Unlock()
		if fail {
			return true, nil, errors.New("the API server is unreachable")
		}
		if strings.Contains(l.Name, "-shard-") {
			w.j.add("%s: holder %q", l.Name, holder)
		}
		return false, nil, nil
	})
	w.clients.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.CreateAction).GetObject().(*coordv1.Lease)
		if strings.Contains(l.Name, "-shard-") {
			w.j.add("%s: holder %q", l.Name, ptr.Deref(l.Spec.HolderIdentity, ""))
		}
		return false, nil, nil
	})
	return w
}

func (w *world) replica(name string) *replica {
	r := &replica{name: name, pause: &Standby{}, held: make(chan []int, 100)}
	r.s = NewSharder(ShardingConfig{
		Leases: w.clients.CoordinationV1(), Namespace: "ns", Name: "op", Shards: shards, Identity: name,
		Clock: w.clock, Logger: slog.New(slog.DiscardHandler), Pause: r.pause,
		Held: func(shards []int) { r.held <- shards },
	})
	r.pause.Pause(ShardingReason) // as Run does
	// The reactor's stand-in: halts at once (or once the test lets go of
	// stopping), journalling what it serves.
	w.wg.Go(func() {
		var (
			served    []int
			standbys  int
			wasPaused bool
		)
		for {
			paused, changed := r.pause.State()
			set, version, moved := r.s.Serving().State()
			if paused && !wasPaused {
				standbys++
				w.j.add("%s: standing by #%d", name, standbys)
			}
			wasPaused = paused
			if !paused {
				w.j.add("%s: serving %v", name, r.serving(w.names))
			}
			if slices.ContainsFunc(served, func(i int) bool { return !slices.Contains(set.Held, i) }) {
				r.stopping.Lock()
				r.stopping.Unlock() // empty on purpose: a barrier the test may hold
			}
			served = set.Held
			w.j.add("%s: halted v%d", name, version)
			r.s.Serving().Halted(version)
			select {
			case <-changed:
			case <-moved:
			case <-w.ctx.Done():
				return
			}
		}
	})
	return r
}

// serving are the shards whose objects the reactor would serve: those
// labelled as the coordinator labels them.
func (r *replica) serving(names []string) []int {
	set := r.s.Set()
	var out []int
	for i, name := range names {
		if set.Owns(map[string]string{set.Label: set.Assign("", name)}) {
			out = append(out, i)
		}
	}
	return out
}

func (w *world) step(r *replica) { r.s.step(w.ctx, nil) }

// before asserts that line a is journalled, and before line b.
func (w *world) before(a, b string) {
	w.t.Helper()
	w.j.await(w.t, a)
	w.j.await(w.t, b)
	ia, ib := w.j.index(a), w.j.index(b)
	if ia < 0 || ib < 0 || ia > ib {
		w.t.Errorf("want %q (at %d) before %q (at %d); journal:\n%s", a, ia, b, ib, w.j)
	}
}

func TestHandoverReleasesAfterHaltingAndAcquiresBeforeServing(t *testing.T) {
	w := newWorld(t)
	a := w.replica("a")
	w.step(a)
	if got := a.s.Held(); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("a alone holds %v, want every shard", got)
	}
	w.before(`op-shard-3: holder "a"`, "a: serving [0 1 2 3]")

	b := w.replica("b")
	w.step(b) // b joins; every shard is held by a, alive
	if got := b.s.Held(); len(got) != 0 {
		t.Fatalf("b took %v from a live replica", got)
	}
	w.clock.Step(DefaultRetryPeriod)
	w.step(a) // a sees b and releases its share: its highest shards
	if got := a.s.Held(); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("a holds %v after b joined, want [0 1]", got)
	}
	// Released only once no longer served and halted; the shards kept
	// are served throughout: no pause of the whole replica.
	w.before("a: serving [0 1]", "a: halted v2")
	w.before("a: halted v2", `op-shard-3: holder ""`)
	w.before("a: halted v2", `op-shard-2: holder ""`)
	if i := w.j.index("a: standing by #2"); i >= 0 {
		t.Errorf("a paused as a whole to hand shards over; journal:\n%s", w.j)
	}

	w.step(b) // b takes the released shards, then serves them
	if got := b.s.Held(); !slices.Equal(got, []int{2, 3}) {
		t.Fatalf("b holds %v, want [2 3]", got)
	}
	w.before(`op-shard-3: holder ""`, `op-shard-3: holder "b"`)
	w.before(`op-shard-3: holder "b"`, "b: serving [2 3]")
	if got := b.serving(w.names); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("b serves %v, want [2 3]", got)
	}

	// a dies: its leases stop changing; b takes them a lease duration
	// after it last saw them change, not before.
	w.clock.Step(DefaultRenewDeadline)
	w.step(b)
	if got := b.s.Held(); !slices.Equal(got, []int{2, 3}) {
		t.Fatalf("b holds %v before a's leases expired, want [2 3]", got)
	}
	w.clock.Step(DefaultLeaseDuration - DefaultRenewDeadline + DefaultRetryPeriod)
	w.step(b)
	if got := b.s.Held(); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("b holds %v after a's leases expired, want every shard; journal:\n%s", got, w.j)
	}
	w.before(`op-shard-0: holder "b"`, "b: serving [0 1 2 3]")
}

// A shard handed over is released only once the reactor reports it halted
// (its handlers finished, its daemons and timers returned): not while its
// work is still stopping, though it is no longer served.
func TestReleaseWaitsForTheShardsWorkToStop(t *testing.T) {
	w := newWorld(t)
	a := w.replica("a")
	w.step(a)
	b := w.replica("b")
	w.step(b)
	w.clock.Step(DefaultRetryPeriod)

	a.stopping.Lock() // the work of the shards a hands over takes its time
	stepped := make(chan struct{})
	go func() {
		defer close(stepped)
		w.step(a)
	}()
	w.j.await(t, "a: serving [0 1]") // shards 2 and 3 stopping
	select {
	case <-stepped:
		t.Fatal("the handover ended before the shards handed over halted")
	default:
	}
	if i := w.j.index(`op-shard-3: holder ""`); i >= 0 {
		t.Fatalf("shard 3 released while its work was stopping; journal:\n%s", w.j)
	}
	a.stopping.Unlock()
	<-stepped
	w.before("a: halted v2", `op-shard-3: holder ""`)
	w.before("a: halted v2", `op-shard-2: holder ""`)
}

func TestAShardNotRenewedInTimeIsLostAndStopped(t *testing.T) {
	w := newWorld(t)
	a := w.replica("a")
	w.step(a)
	w.mu.Lock()
	w.failing["a"] = true
	w.mu.Unlock()
	w.clock.Step(DefaultRetryPeriod)
	w.step(a)
	if got := a.s.Held(); len(got) != shards {
		t.Fatalf("a holds %v within the renew deadline, want every shard", got)
	}
	w.clock.Step(DefaultRenewDeadline)
	w.step(a)
	if got := a.s.Held(); len(got) != 0 {
		t.Fatalf("a holds %v past the renew deadline, want none", got)
	}
	if got := a.serving(w.names); len(got) != 0 {
		t.Errorf("a still serves %v", got)
	}
	if !a.pause.Paused() {
		t.Error("a replica without shards must stand by")
	}
}

func TestRunReleasesEverythingOnExit(t *testing.T) {
	w := newWorld(t)
	r := w.replica("a")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.s.Run(ctx) }()
	// Run acquires every shard on its first round.
	if got := <-r.held; !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("Run holds %v, want every shard", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	list, err := w.clients.CoordinationV1().Leases("ns").List(context.Background(), metavOpts())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list.Items {
		if strings.Contains(l.Name, "-member-") {
			t.Errorf("the membership lease %s is left", l.Name)
		} else if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "" {
			t.Errorf("lease %s still held by %q", l.Name, h)
		}
	}
}

func metavOpts() metav1.ListOptions { return metav1.ListOptions{} }

func TestRenewedAt(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	since := now.Add(-2 * time.Second)
	margin := 2500 * time.Millisecond
	for _, tc := range []struct {
		name      string
		renewTime time.Time
		since     time.Time
		want      time.Time
	}{
		{"clocks agree: the renewTime", now.Add(-time.Second), since, now.Add(-time.Second)},
		{"renewed just as the list was sent", since, since, since},
		{"a holder's clock behind: when the previous list was sent", now.Add(-time.Minute), since, since},
		{"a holder's clock ahead: now", now.Add(time.Minute), since, now},
		{"no renewTime: the earliest it could be", time.Time{}, since, since},
		{"first seen, a clock far behind: no earlier than the margin", now.Add(-time.Hour), now.Add(-15 * time.Second), now.Add(-margin)},
		{"first seen, clocks agreeing within the margin", now.Add(-2 * time.Second), now.Add(-15 * time.Second), now.Add(-2 * time.Second)},
		{"first seen, renewed longer ago than the margin", now.Add(-10 * time.Second), now.Add(-15 * time.Second), now.Add(-margin)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := renewedAt(tc.renewTime, tc.since, now, margin); !got.Equal(tc.want) {
				t.Errorf("renewedAt = now%+v, want now%+v", got.Sub(now), tc.want.Sub(now))
			}
		})
	}
}

// A replica that dies is replaced as soon as its Leases expire, a lease
// duration after its last renewal: not at the next of the survivor's
// rounds after that, and not a lease duration after the survivor first
// happened to see them.
func TestADeadReplicasShardsAreTakenWhenItsLeasesExpire(t *testing.T) {
	w := newWorld(t)
	a := w.replica("a")
	w.step(a) // a holds every shard, renewed now; then a dies
	died := w.clock.Now()

	// b starts 1.5s later: its ticks fall half a second off a's renewals
	// and off their expiry.
	w.clock.Step(1500 * time.Millisecond)
	b := w.replica("b")
	lists := func() int {
		n := 0
		for _, a := range w.clients.Actions() {
			if a.GetVerb() == "list" && a.GetResource().Resource == "leases" {
				n++
			}
		}
		return n
	}
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan error, 1)
	go func() { done <- b.s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	failure := time.NewTimer(30 * time.Second) // a failure detector
	defer failure.Stop()
	awaitRound := func(n int) {
		t.Helper()
		// A round is over once b has listed and waits again on its
		// ticker and the expiry's timer.
		for lists() < n || w.clock.Waiters() < 2 {
			select {
			case <-failure.C:
				t.Fatalf("b's round %d never ends (lists %d, clock waiters %d)", n, lists(), w.clock.Waiters())
			case <-time.After(time.Millisecond):
			}
		}
	}
	awaitRound(1)
	if got := b.s.Held(); len(got) != 0 {
		t.Fatalf("b took %v from a live replica", got)
	}

	// A moment before a's Leases expire, b's rounds take nothing.
	w.clock.SetTime(died.Add(DefaultLeaseDuration - time.Millisecond))
	awaitRound(2)
	if got := b.s.Held(); len(got) != 0 {
		t.Fatalf("b took %v before a's leases expired", got)
	}
	// As they expire, b takes every shard, though no tick of its is due
	// before half a second later.
	w.clock.SetTime(died.Add(DefaultLeaseDuration))
	for {
		select {
		case got := <-b.held:
			if slices.Equal(got, []int{0, 1, 2, 3}) {
				w.before(`op-shard-0: holder "b"`, "b: serving [0 1 2 3]")
				return
			}
		case <-failure.C:
			t.Fatalf("b holds %v a lease duration after a's last renewal, want every shard; journal:\n%s", b.s.Held(), w.j)
		}
	}
}

// A Lease of another replica that has expired and is still there (a dead
// replica's membership until it is deleted, a shard for a third replica
// to take) is no reason to wake: the next expiry is in the future, or there
// is none, else the sharder would go round without pause.
func TestNextExpiryIsInTheFuture(t *testing.T) {
	w := newWorld(t)
	s := w.replica("b").s
	now := w.clock.Now()
	s.seen = map[string]sighting{
		"op-member-a": {holder: "a", at: now.Add(-time.Minute), duration: DefaultLeaseDuration},
		"op-shard-0":  {holder: "a", at: now.Add(-DefaultLeaseDuration), duration: DefaultLeaseDuration},
		"op-shard-1":  {holder: "b", at: now, duration: DefaultLeaseDuration},
		"op-shard-2":  {holder: "", at: now, duration: time.Second},
		"op-member-c": {holder: "c", at: now.Add(-5 * time.Second), duration: DefaultLeaseDuration},
		"op-shard-3":  {holder: "c", at: now.Add(-3 * time.Second), duration: DefaultLeaseDuration},
	}
	if at, ok := s.nextExpiry(); !ok || !at.Equal(now.Add(10*time.Second)) {
		t.Errorf("nextExpiry = now%+v, %v; want now+10s (c's membership)", at.Sub(now), ok)
	}
	delete(s.seen, "op-member-c")
	delete(s.seen, "op-shard-3")
	if at, ok := s.nextExpiry(); ok {
		t.Errorf("nextExpiry = now%+v with only expired, own and free Leases; want none", at.Sub(now))
	}
}
