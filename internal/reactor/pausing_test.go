package reactor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/indexing"
	"github.com/kopfgo/kopfgo/internal/replicas"
)

func TestPauseStopsWatchingAndResumeHandlesWhatCameMeanwhile(t *testing.T) {
	s := newScenario(t)
	s.pause = &replicas.Standby{}
	var calls counter
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		calls.inc(c.Name)
		return nil, nil
	})
	s.create("kex1", map[string]any{"field": "value"})
	s.start()
	s.until("kex1 handled", func() bool {
		_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
		return ok
	})

	s.pause.Pause("peering")
	s.until("the watch paused and stopped", func() bool {
		log := s.log.String()
		return strings.Contains(log, "Pausing the watch-stream for kopfexamples.v1.kopf.dev in 'default' (blockers: peering).") &&
			strings.Contains(log, "Stopping the watch-stream for kopfexamples.v1.kopf.dev in 'default'.")
	})
	// Nothing watches now: an object created meanwhile waits for the resume.
	s.create("kex2", map[string]any{"field": "value"})
	if _, ok := annotation(s.get("kex2"), "kopf.zalando.org/last-handled-configuration"); ok || calls.get("kex2") != 0 {
		t.Fatal("an object was handled while the operator was paused")
	}
	if strings.Contains(s.log.String(), "the resource is gone") {
		t.Error("a pause was reported as the resource being gone")
	}

	s.pause.Resume("peering")
	s.until("kex2 handled after the resume", func() bool {
		_, ok := annotation(s.get("kex2"), "kopf.zalando.org/last-handled-configuration")
		return ok
	})
	if !strings.Contains(s.log.String(), "Resuming the watch-stream for kopfexamples.v1.kopf.dev in 'default'.") {
		t.Error("the resume is not logged")
	}
	s.stop()
	if n1, n2 := calls.get("kex1"), calls.get("kex2"); n1 != 1 || n2 != 1 {
		t.Errorf("create handler calls: kex1 %d, kex2 %d; want 1 each", n1, n2)
	}
}

func TestPausedFromTheStartWatchesNothingUntilResumed(t *testing.T) {
	s := newScenario(t)
	s.pause = &replicas.Standby{}
	s.pause.Pause("leader election")
	var calls counter
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		calls.inc(c.Name)
		return nil, nil
	})
	s.create("kex1", map[string]any{"field": "value"})
	s.start()
	s.until("paused at the start", func() bool {
		return strings.Contains(s.log.String(), "Pausing the watch-stream for kopfexamples.v1.kopf.dev in 'default' (blockers: leader election).")
	})
	s.pause.Resume("leader election")
	s.until("kex1 handled after the resume", func() bool {
		_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
		return ok
	})
	s.stop()
	if strings.Count(s.log.String(), "Starting the watch-stream for kopfexamples") != 1 {
		t.Errorf("want exactly one watch started (after the resume); log:\n%s", s.log)
	}
	if n := calls.get("kex1"); n != 1 {
		t.Errorf("create handler calls: %d, want 1", n)
	}
}

// A pause stops each object's daemons with ErrOperatorPausing, and the
// resume spawns them again only once the old ones have returned: never two
// at once for one object.
func TestPauseStopsDaemonsAndResumeRespawnsThemAfterTheyReturn(t *testing.T) {
	s := newScenario(t)
	s.pause = &replicas.Standby{}
	var running, overlaps, starts atomic.Int32
	reasons := make(chan error, 2)
	release := make(chan struct{})
	s.daemon("monitor", func(ctx context.Context, sp *handlers.Spawn) (any, error) {
		if running.Add(1) > 1 {
			overlaps.Add(1)
		}
		defer running.Add(-1)
		n := starts.Add(1)
		s.poke() // for the until below: no log line follows the count
		if n > 1 {
			return nil, nil // the respawned one: done
		}
		<-ctx.Done()
		reasons <- context.Cause(ctx)
		<-release // a slow cleanup
		sp.Logger.Info("The first daemon returns.")
		return nil, nil
	})
	s.create("kex1", map[string]any{"field": "value"})
	s.start()
	s.until("the daemon started", func() bool { return starts.Load() == 1 })

	s.pause.Pause("peering")
	select {
	case got := <-reasons:
		if !errors.Is(got, handlers.ErrOperatorPausing) {
			t.Errorf("context.Cause = %v, want ErrOperatorPausing", got)
		}
	case <-time.After(30 * time.Second): // a failure detector
		close(release)
		t.Fatal("the pause did not stop the daemon")
	}
	s.pause.Resume("peering")
	s.until("resumed", func() bool { return strings.Contains(s.log.String(), "Resuming the watch-stream") })
	close(release)
	s.until("the daemon respawned", func() bool { return starts.Load() == 2 })
	s.stop()
	if n := overlaps.Load(); n != 0 {
		t.Errorf("the daemon ran twice at once %d times", n)
	}
	log := s.log.String()
	first := strings.Index(log, "The first daemon returns.")
	second := strings.LastIndex(log, "Starting the watch-stream for kopfexamples")
	if first < 0 || second < first {
		t.Errorf("the resumed watch started before the paused daemon returned; log:\n%s", log)
	}
}

// The reactor reports a shard taken out halted (replicas.Serving.WaitHalted)
// only once the daemons it stopped have returned: sharding releases the
// shard's Lease only then. The last shard taken out (all lost) stops its
// daemons as a pause does, not as if the resource were gone.
func TestAShardIsHaltedOnlyOnceItsDaemonsHaveReturned(t *testing.T) {
	s := newScenario(t)
	serving := replicas.NewServing(replicas.ShardSet{Label: testShardLabel, Shards: 2, Held: []int{0}})
	s.shards = serving
	var returned atomic.Bool
	release := make(chan struct{})
	started := make(chan struct{})
	var cause atomic.Value
	s.daemon("monitor", func(ctx context.Context, sp *handlers.Spawn) (any, error) {
		close(started)
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		<-release // a slow cleanup
		returned.Store(true)
		return nil, nil
	})
	s.createLabelled("kex1", map[string]string{testShardLabel: "0"})
	s.start()
	<-started
	serving.Serve(nil)
	halted := make(chan error, 1)
	go func() { halted <- serving.WaitHalted(context.Background(), nil, nil) }()
	select {
	case err := <-halted:
		t.Fatalf("halted (%v) while the daemon still runs", err)
	default:
	}
	close(release)
	if err := <-halted; err != nil {
		t.Fatalf("WaitHalted: %v", err)
	}
	if !returned.Load() {
		t.Error("halted before the daemon returned")
	}
	if got, _ := cause.Load().(error); !errors.Is(got, handlers.ErrOperatorPausing) {
		t.Errorf("the daemon stopped with %v, want ErrOperatorPausing", got)
	}
	s.stop()
	if strings.Contains(s.log.String(), "the resource is gone") {
		t.Errorf("the last shard taken out was logged as a resource gone; log:\n%s", s.log)
	}
}

// With Config.Shards (sharding), the watch selects the objects labelled
// with the shards held: the others' are neither handled nor indexed, and
// only the holder of shard 0 labels the objects of no shard. A swap of the
// shards serves the new ones.
func TestShardsKeepOtherShardsObjectsAway(t *testing.T) {
	s := newScenario(t)
	set := replicas.NewServing(replicas.ShardSet{Label: testShardLabel, Shards: 2, Held: []int{1}})
	s.shards = set
	var calls counter
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		calls.inc(c.Name)
		return nil, nil
	})
	s.createLabelled("kex1", map[string]string{testShardLabel: "1"})
	s.createLabelled("kex2", map[string]string{testShardLabel: "0"})
	s.create("kex3", map[string]any{"field": "value"}) // of no shard
	s.start()
	s.until("kex1 handled", func() bool {
		_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
		return ok
	})
	if _, ok := annotation(s.get("kex2"), "kopf.zalando.org/last-handled-configuration"); ok || calls.get("kex2") != 0 {
		t.Fatal("another shard's object was handled")
	}
	if got := s.get("kex3").GetLabels(); got[testShardLabel] != "" || calls.get("kex3") != 0 {
		t.Fatalf("a replica without shard 0 labelled (%v) or handled an object of no shard", got)
	}
	set.Serve([]int{0})
	s.until("kex2 handled after the swap", func() bool {
		_, ok := annotation(s.get("kex2"), "kopf.zalando.org/last-handled-configuration")
		return ok
	})
	s.until("kex3 labelled by the holder of shard 0", func() bool { return s.get("kex3").GetLabels()[testShardLabel] != "" })
	if got, want := s.get("kex3").GetLabels()[testShardLabel], set.Set().Assign("default", "kex3"); got != want {
		t.Errorf("kex3 labelled with shard %s, want %s (its key's)", got, want)
	}
	s.stop()
	if n1, n2 := calls.get("kex1"), calls.get("kex2"); n1 != 1 || n2 != 1 {
		t.Errorf("create handler calls: kex1 %d, kex2 %d; want 1 each", n1, n2)
	}
}

// The coordinator labels an object of no shard with one patch; the
// object then enters the watch of its shard and is handled once there, and
// the label is no change of it: no update handler runs.
func TestCoordinatorLabelsObjectsOfNoShard(t *testing.T) {
	s := newScenario(t)
	created, updates := s.soleShardHolder()
	s.create("kex1", map[string]any{"field": "value"})
	s.start()
	s.until("kex1 handled", func() bool {
		_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
		return ok
	})
	s.stop()
	if got, want := s.get("kex1").GetLabels()[testShardLabel], (replicas.ShardSet{Shards: 2}).Assign("default", "kex1"); got != want {
		t.Errorf("kex1 labelled with shard %q, want %q", got, want)
	}
	if c, u := created.get("kex1"), updates(); c != 1 || len(u) != 0 {
		t.Errorf("handler calls: create %d, update %d; want 1 and 0", c, len(u))
	}
}

// An object handled before sharding began is labelled without being
// handled again: the label is no change of it. Its next real change is
// handled once, with a diff of that change alone.
func TestLabellingAnObjectHandledBeforeIsNoChange(t *testing.T) {
	s := newScenario(t)
	created, updates := s.soleShardHolder()
	s.create("kex1", map[string]any{"field": "value"})
	s.update("kex1", func(u *unstructured.Unstructured) {
		u.SetAnnotations(map[string]string{"kopf.zalando.org/last-handled-configuration": `{"spec":{"field":"value"}}` + "\n"})
	})
	s.start()
	s.until("kex1 labelled", func() bool { return s.get("kex1").GetLabels()[testShardLabel] != "" })
	s.update("kex1", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "changed", "spec", "field")
	})
	s.until("the change handled", func() bool { return len(updates()) > 0 })
	s.stop()
	if diffs := updates(); len(diffs) != 1 || !strings.Contains(diffs[0], "field") || strings.Contains(diffs[0], "labels") || created.get("kex1") != 0 {
		t.Errorf("update diffs %q and %d creations; want one update, of spec.field only", diffs, created.get("kex1"))
	}
}

const testShardLabel = "shard.kopfgo.dev/test"

// soleShardHolder makes the scenario's replica hold both shards of a
// sharding of two (and so label the objects of none), with a create
// handler that counts its calls and an update handler that notes its diffs.
func (s *scenario) soleShardHolder() (created *counter, updates func() []string) {
	s.shards = replicas.NewServing(replicas.ShardSet{Label: testShardLabel, Shards: 2, Held: []int{0, 1}})
	created = &counter{}
	var mu sync.Mutex
	var diffs []string
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		created.inc(c.Name)
		return nil, nil
	})
	s.on(causes.Update, "update_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		mu.Lock()
		diffs = append(diffs, fmt.Sprint(c.Diff))
		mu.Unlock()
		return nil, nil
	})
	return created, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(diffs)
	}
}

// createLabelled creates a KopfExample with these labels.
func (s *scenario) createLabelled(name string, labels map[string]string) {
	s.create(name, map[string]any{"field": "value"})
	s.update(name, func(u *unstructured.Unstructured) { u.SetLabels(labels) })
}

// A global index (kopfgo.Global) sees the objects of every shard, other
// replicas' included, and loses them when they go; an ordinary index, like
// the handlers, sees only the replica's own.
func TestGlobalIndexSeesOtherShardsObjects(t *testing.T) {
	s := newScenario(t)
	s.shards = replicas.NewServing(replicas.ShardSet{Label: testShardLabel, Shards: 2, Held: []int{0}})
	global, local := s.indexByName("global", true), s.indexByName("local", false)
	var calls counter
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		calls.inc(c.Name)
		return nil, nil
	})
	s.createLabelled("kex1", map[string]string{testShardLabel: "0"})
	s.createLabelled("kex2", map[string]string{testShardLabel: "1"})
	s.start()
	s.until("both objects in the global index", func() bool { return len(global.Get("kex1")) == 1 && len(global.Get("kex2")) == 1 })
	s.until("kex1 handled", func() bool {
		_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
		return ok
	})
	if len(local.Get("kex1")) != 1 || len(local.Get("kex2")) != 0 {
		t.Errorf("the ordinary index: kex1 %v, kex2 %v; want only the replica's own kex1", local.Get("kex1"), local.Get("kex2"))
	}
	s.delete("kex2")
	// A deletion leaves an index without a log line or a write, which are
	// the scenario's news: look again every few milliseconds.
	deadline := time.NewTimer(30 * time.Second) // only a failure detector
	defer deadline.Stop()
	look := time.NewTicker(5 * time.Millisecond)
	defer look.Stop()
	for len(global.Get("kex2")) != 0 {
		select {
		case <-s.news:
		case <-look.C:
		case <-deadline.C:
			t.Fatalf("never reached: kex2 gone from the global index\nlog:\n%s", s.log)
		}
	}
	s.stop()
	if n1, n2 := calls.get("kex1"), calls.get("kex2"); n1 != 1 || n2 != 0 {
		t.Errorf("create handler calls: kex1 %d, kex2 %d; want only the replica's own kex1", n1, n2)
	}
}

// A shard handed over stops alone (replicas.Serving): its objects' daemons
// stop with ErrOperatorPausing and leave the replica's indices, and the
// reactor reports it halted only after they have returned; the shard kept
// goes on untouched: its daemon is not restarted, its resume handler not
// called again. A shard served again is listed and handled as new. So it
// goes for a resource with a global index too, whose one watch of every
// object changes in place which shards it serves: its global index keeps
// every object throughout.
func TestAShardHandedOverStopsAloneAndTheKeptOneGoesOn(t *testing.T) {
	t.Run("per-shard watches", func(t *testing.T) { testAShardHandedOver(t, false) })
	t.Run("a watch of every object for a global index", func(t *testing.T) { testAShardHandedOver(t, true) })
}

func testAShardHandedOver(t *testing.T, withGlobal bool) {
	s := newScenario(t)
	serving := replicas.NewServing(replicas.ShardSet{Label: testShardLabel, Shards: 2, Held: []int{0, 1}})
	s.shards = serving
	local := s.indexByName("local", false)
	var global *indexing.Index[string, string]
	if withGlobal {
		global = s.indexByName("global", true)
	}
	globalHoldsBoth := func() bool {
		return global == nil || len(global.Get("kex0")) == 1 && len(global.Get("kex1")) == 1
	}
	var resumed, starts counter
	s.on(causes.Resume, "resume_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		resumed.inc(c.Name)
		return nil, nil
	})
	var mu sync.Mutex
	stops := map[string][]error{}
	returned := map[string]bool{}
	s.daemon("monitor", func(ctx context.Context, sp *handlers.Spawn) (any, error) {
		starts.inc(sp.Name)
		s.poke()
		<-ctx.Done()
		mu.Lock()
		defer mu.Unlock()
		stops[sp.Name] = append(stops[sp.Name], context.Cause(ctx))
		returned[sp.Name] = true
		return nil, nil
	})
	for name, shard := range map[string]string{"kex0": "0", "kex1": "1"} {
		s.createLabelled(name, map[string]string{testShardLabel: shard})
		s.update(name, func(u *unstructured.Unstructured) { // handled before: resumed when listed
			u.SetAnnotations(map[string]string{"kopf.zalando.org/last-handled-configuration": `{"spec":{"field":"value"}}` + "\n"})
		})
	}
	s.start()
	s.until("both resumed, their daemons started", func() bool {
		return resumed.get("kex0") == 1 && resumed.get("kex1") == 1 && starts.get("kex0") == 1 && starts.get("kex1") == 1
	})

	serving.Serve([]int{0}) // shard 1 handed over
	if err := serving.WaitHalted(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if !returned["kex1"] || len(stops["kex1"]) != 1 || !errors.Is(stops["kex1"][0], handlers.ErrOperatorPausing) {
		t.Errorf("halted with kex1's daemon returned %v, stopped with %v; want returned, ErrOperatorPausing", returned["kex1"], stops["kex1"])
	}
	if len(stops["kex0"]) != 0 {
		t.Errorf("the kept shard's daemon was stopped: %v", stops["kex0"])
	}
	mu.Unlock()
	if len(local.Get("kex1")) != 0 || len(local.Get("kex0")) != 1 {
		t.Errorf("the replica's index: kex0 %v, kex1 %v; want kex0 only", local.Get("kex0"), local.Get("kex1"))
	}
	if !globalHoldsBoth() {
		t.Errorf("the global index after the handover: kex0 %v, kex1 %v; want both", global.Get("kex0"), global.Get("kex1"))
	}

	serving.Serve([]int{0, 1}) // shard 1 back
	s.until("kex1 resumed and its daemon started again", func() bool {
		return resumed.get("kex1") == 2 && starts.get("kex1") == 2 && len(local.Get("kex1")) == 1
	})
	s.stop()
	if r, n := resumed.get("kex0"), starts.get("kex0"); r != 1 || n != 1 {
		t.Errorf("the kept kex0: resumed %d times, its daemon started %d times; want once each", r, n)
	}
	if !globalHoldsBoth() {
		t.Errorf("the global index at the end: kex0 %v, kex1 %v; want both", global.Get("kex0"), global.Get("kex1"))
	}
	if strings.Contains(s.log.String(), "Pausing the watch-stream") {
		t.Errorf("a handover paused the whole replica; log:\n%s", s.log)
	}
}

// A resource with a global index keeps one watch of every object, whose
// shards served change in place: its global index keeps every object, and
// the replica's own index forgets the objects of the shard handed over,
// and only them.
func TestTheWatchOfAGlobalIndexForgetsOnlyTheShardsGone(t *testing.T) {
	s := newScenario(t)
	serving := replicas.NewServing(replicas.ShardSet{Label: testShardLabel, Shards: 2, Held: []int{0, 1}})
	s.shards = serving
	global, local := s.indexByName("global", true), s.indexByName("local", false)
	s.createLabelled("kex0", map[string]string{testShardLabel: "0"})
	s.createLabelled("kex1", map[string]string{testShardLabel: "1"})
	s.start()
	s.until("both objects in both indices", func() bool {
		return len(global.Get("kex0")) == 1 && len(global.Get("kex1")) == 1 && len(local.Get("kex0")) == 1 && len(local.Get("kex1")) == 1
	})
	serving.Serve([]int{0})
	if err := serving.WaitHalted(context.Background(), nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(local.Get("kex1")) != 0 || len(local.Get("kex0")) != 1 {
		t.Errorf("the replica's index after the handover: kex0 %v, kex1 %v; want kex0 only", local.Get("kex0"), local.Get("kex1"))
	}
	if len(global.Get("kex0")) != 1 || len(global.Get("kex1")) != 1 {
		t.Errorf("the global index after the handover: kex0 %v, kex1 %v; want both", global.Get("kex0"), global.Get("kex1"))
	}
	s.stop()
}

// indexByName registers an index of the KopfExamples by their names,
// global (kopfgo.Global) or the replica's own.
func (s *scenario) indexByName(id string, global bool) *indexing.Index[string, string] {
	byName := func(ctx context.Context, o *handlers.Object) (map[string]string, error) {
		return map[string]string{o.Name: o.Name}, nil
	}
	index, runner, err := indexing.Register(&handling.Registry{}, "kopfexamples", byName, func(h *handling.Handler) {
		h.ID, h.Global = id, global
	})
	if err != nil {
		s.t.Fatal(err)
	}
	s.indexers = append(s.indexers, runner)
	return index
}

// The watch of every object of a resource with a global index serves a
// shard taken over in place: its objects, foreign until then (in the
// global index only, never handled), are handled as newly listed and enter
// the replica's own index; the kept shard's object is not handled again.
func TestTheWatchOfAGlobalIndexServesAShardTakenOver(t *testing.T) {
	s := newScenario(t)
	serving := replicas.NewServing(replicas.ShardSet{Label: testShardLabel, Shards: 2, Held: []int{0}})
	s.shards = serving
	global, local := s.indexByName("global", true), s.indexByName("local", false)
	var created counter
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		created.inc(c.Name)
		return nil, nil
	})
	s.createLabelled("kex0", map[string]string{testShardLabel: "0"})
	s.createLabelled("kex1", map[string]string{testShardLabel: "1"})
	s.start()
	s.until("kex0 handled, kex1 in the global index", func() bool {
		return created.get("kex0") == 1 && len(global.Get("kex1")) == 1
	})
	if created.get("kex1") != 0 || len(local.Get("kex1")) != 0 {
		t.Fatalf("another replica's kex1 was handled (%d) or indexed as the replica's own (%v)", created.get("kex1"), local.Get("kex1"))
	}
	serving.Serve([]int{0, 1})
	s.until("kex1 handled after the takeover", func() bool {
		_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
		return ok && len(local.Get("kex1")) == 1
	})
	s.stop()
	if c0, c1 := created.get("kex0"), created.get("kex1"); c0 != 1 || c1 != 1 {
		t.Errorf("create handler calls: kex0 %d, kex1 %d; want 1 each", c0, c1)
	}
	if len(global.Get("kex0")) != 1 || len(global.Get("kex1")) != 1 || len(local.Get("kex0")) != 1 {
		t.Errorf("indices at the end: global kex0 %v, kex1 %v; local kex0 %v", global.Get("kex0"), global.Get("kex1"), local.Get("kex0"))
	}
	if n := strings.Count(s.log.String(), "Starting the watch-stream for kopfexamples"); n != 1 {
		t.Errorf("the watch started %d times, want once (the shards change in place); log:\n%s", n, s.log)
	}
}

// A shard handed over and taken back at once, while its daemon still
// stops, is served again only once that daemon has returned: never two
// daemons of one object at once, though the watch of every object goes on.
func TestAShardTakenBackWhileStoppingWaitsForItsDaemons(t *testing.T) {
	s := newScenario(t)
	serving := replicas.NewServing(replicas.ShardSet{Label: testShardLabel, Shards: 2, Held: []int{0, 1}})
	s.shards = serving
	s.indexByName("global", true)
	var starts counter
	release := make(chan struct{})
	stopping := make(chan struct{}, 1)
	s.daemon("monitor", func(ctx context.Context, sp *handlers.Spawn) (any, error) {
		starts.inc(sp.Name)
		s.poke()
		<-ctx.Done()
		if starts.get(sp.Name) == 1 {
			stopping <- struct{}{}
			<-release // a slow cleanup
			sp.Logger.Info("The first daemon returns.")
		}
		return nil, nil
	})
	s.createLabelled("kex1", map[string]string{testShardLabel: "1"})
	s.start()
	s.until("the daemon started", func() bool { return starts.get("kex1") == 1 })
	serving.Serve([]int{0})
	<-stopping
	serving.Serve([]int{0, 1})
	close(release)
	s.until("the daemon started again", func() bool { return starts.get("kex1") == 2 })
	s.stop()
	log := s.log.String()
	returned := strings.Index(log, "The first daemon returns.")
	again := strings.LastIndex(log, "Serving shard 1 of kopfexamples.v1.kopf.dev in 'default'.")
	if returned < 0 || again < returned {
		t.Errorf("shard 1 was served again before its first daemon returned; log:\n%s", log)
	}
	if n := starts.get("kex1"); n != 2 {
		t.Errorf("the daemon started %d times, want 2", n)
	}
}
