//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kopfgo/kopfgo/internal/conventions"
)

// TestShardedWatchesSplitTheEvents: three replicas with --shards, objects
// created before they start (the holder of shard 0 labels them) and after
// (labelled as they come), one replica SIGKILLed and one joining. Each
// object is labelled with its key's shard (conventions.Shard) and handled once, by its shard's
// holder; each replica receives the watch events of its own shards' objects
// only (its kopfgo_watch_events_total against the events that the test's
// own watch sees of those objects); daemons never run on two replicas at
// once (compat: replicas-sharding).
func TestShardedWatchesSplitTheEvents(t *testing.T) {
	const batch = 60
	ns := namespace(t)
	name := "kopfgo-split"
	rs := newShardedReplicas(t, ns, name)
	label := conventions.ShardLabel(name)
	ports := map[string]string{}
	start := func(pod string) {
		ports[pod] = freeTCPPort(t)
		rs.start(pod, "--metrics-addr", "127.0.0.1:"+ports[pod])
	}
	created := 0
	create := func(prefix string, n int) {
		createKexes(t, ns, prefix, n)
		created += n
	}
	allHandled := func() { waitBacklogHandled(t, dyn(t), ns, created, handled) }
	// events are a replica's watch events of KopfExamples so far, once
	// they have stopped growing (a handover's listing may be under way).
	events := func(pod string) float64 {
		var last float64 = -1
		var stable int
		eventually(t, time.Minute, pod+"'s watch events to settle", func() (bool, error) {
			code, body := scrape(t, "http://127.0.0.1:"+ports[pod]+"/metrics")
			if code != 200 {
				return false, fmt.Errorf("/metrics: %d %s", code, body)
			}
			n := watchEvents(body)
			if n == last {
				stable++
			} else {
				last, stable = n, 0
			}
			return stable >= 10, fmt.Errorf("%v events, still changing", n)
		})
		return last
	}
	// measure runs a batch and checks that each pod received the events of
	// its shards' objects only: as many as the test's own watch saw of the
	// objects labelled with its shards (the events of an object before it
	// was labelled go to the labeller alone, which these do not count).
	measure := func(prefix string, pods ...string) {
		before := map[string]float64{}
		for _, pod := range pods {
			before[pod] = events(pod)
		}
		owner := rs.holders()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// From the present on: a watch from no version would begin with
		// an ADDED of every object there is.
		list, err := dyn(t).Resource(kexGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := dyn(t).Resource(kexGVR).Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		want := map[string]float64{}
		var wantMu sync.Mutex
		var counted sync.WaitGroup
		counted.Go(func() {
			for e := range w.ResultChan() {
				u, ok := e.Object.(*unstructured.Unstructured)
				if !ok || e.Type == watch.Bookmark {
					continue
				}
				v, ok := u.GetLabels()[label]
				i, err := strconv.Atoi(v)
				if !ok || err != nil || i < 0 || i >= shardingShards {
					continue
				}
				wantMu.Lock()
				want[owner[i]]++
				wantMu.Unlock()
			}
		})
		create(prefix, batch)
		allHandled()
		got := map[string]float64{}
		for _, pod := range pods {
			got[pod] = events(pod) - before[pod]
		}
		cancel()
		counted.Wait()
		total := 0.0
		for _, pod := range pods {
			total += want[pod]
		}
		for _, pod := range pods {
			t.Logf("%s batch: %s received %.0f watch events; its shards' objects had %.0f of the %.0f", prefix, pod, got[pod], want[pod], total)
			// Equal but for a watch restarted meanwhile (its listing).
			if math.Abs(got[pod]-want[pod]) > 0.1*want[pod]+5 {
				t.Errorf("%s batch: %s received %.0f watch events, want about %.0f (its shards' share of %.0f)", prefix, pod, got[pod], want[pod], total)
			}
		}
	}

	// Objects before the start: no replica has labelled them yet.
	create("early", batch)
	for _, pod := range []string{"replica-a", "replica-b", "replica-c"} {
		start(pod)
	}
	rs.balanced("3 replicas to balance", "replica-a", "replica-b", "replica-c")
	allHandled()

	// Objects after the start, with 3 replicas.
	measure("late", "replica-a", "replica-b", "replica-c")

	// A replica SIGKILLed amid a batch: the others take its shards.
	create("amid", batch)
	victim := rs.pods["replica-c"]
	victim.Kill()
	<-victim.Done()
	journalKill(t, rs.journal, victim.Pid())
	t.Logf("handover after SIGKILL: %s (lease duration 6s, retry period 1s)",
		rs.balanced("the survivors to take the killed replica's shards", "replica-a", "replica-b").Round(100*time.Millisecond))
	allHandled()

	// A replica joining: shards move to it.
	start("replica-d")
	rs.balanced("the shards to rebalance to the new replica", "replica-a", "replica-b", "replica-d")
	measure("joined", "replica-a", "replica-b", "replica-d")

	// Every object carries its key's shard, and was created once by the
	// holder of that shard at the time, except those whose creation the
	// killed replica finished but could not record (SIGKILL's
	// at-least-once window).
	allHandled()
	rs.checkLabelled()
	creations := rs.settledCreations()
	for obj, pods := range creations {
		if len(pods) != 1 && !(len(pods) == 2 && pods[0] == "replica-c" && pods[1] != "replica-c") {
			t.Errorf("%s was created by %v, want once", obj, pods)
		}
	}
	if got := len(creations); got != created {
		t.Errorf("%d objects have been created, want %d", got, created)
	}
	_, overlaps := daemonsRunning(t, rs.journal)
	for _, o := range overlaps {
		t.Error(o)
	}
	for _, f := range journalLines(t, rs.journal) {
		if f[1] == "daemon-twice" {
			t.Errorf("two daemons of %s at once in pid %s", f[2], f[4])
		}
	}
}

var watchEventSeries = regexp.MustCompile(`(?m)^kopfgo_watch_events_total\{resource="kopfexamples\.v1\.kopf\.dev",type="[A-Z]+"\} (\S+)$`)

// watchEvents sums a replica's watch events of KopfExamples, of all types.
func watchEvents(text string) float64 {
	total := 0.0
	for _, m := range watchEventSeries.FindAllStringSubmatch(text, -1) {
		if v, err := strconv.ParseFloat(m[1], 64); err == nil {
			total += v
		}
	}
	return total
}
