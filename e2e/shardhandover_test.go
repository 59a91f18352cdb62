//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/internal/conventions"
)

// TestShardHandoverLeavesTheKeptShardsAlone: a replica that hands shards
// over to a joining one goes on serving the shards it keeps untouched
// (compat: replicas-sharding): their objects are not resumed again and
// their daemons are not restarted. The moved objects' daemons stop in it
// before they start in the joiner, each object is resumed once by each of
// its holders, and created once overall.
func TestShardHandoverLeavesTheKeptShardsAlone(t *testing.T) {
	testShardHandover(t, false)
}

// TestShardHandoverWithAGlobalIndexLeavesTheKeptShardsAlone: the same for a
// resource with a global index (kopfgo.Global), which each replica watches
// whole in one watch whose shards served change in place: the kept shards
// are left alone as well, and each replica's global index holds every
// object throughout.
func TestShardHandoverWithAGlobalIndexLeavesTheKeptShardsAlone(t *testing.T) {
	testShardHandover(t, true)
}

func testShardHandover(t *testing.T, withGlobal bool) {
	ns := namespace(t)
	rs := newShardedReplicas(t, ns, "kopfgo-keep")
	rs.env = []string{"KOPFGO_CHAOS_RESUME=1"}
	if withGlobal {
		rs.env = append(rs.env, "KOPFGO_CHAOS_GLOBAL_INDEX=1")
	}
	// Leases long enough that none is lost on a loaded machine: a lost
	// shard is stopped and served again, legitimately resumed again.
	start := func(pod string) {
		rs.start(pod, "--shards-lease-duration", "15s", "--shards-renew-deadline", "10s", "--shards-retry-period", "1s")
	}
	const n = 24
	var names []string
	for i := range n {
		obj := objYAML(t)
		name := fmt.Sprintf("kex-%02d", i)
		obj["metadata"].(map[string]any)["name"] = name
		createKex(t, ns, obj)
		names = append(names, name)
	}
	// A first replica handles the creations and leaves, so that the next
	// ones list objects handled before: they resume them.
	start("replica-0")
	waitBacklogHandled(t, dyn(t), ns, n, handled)
	if err := rs.pods["replica-0"].Stop(30 * time.Second); err != nil {
		t.Fatalf("stopping replica-0: %v", err)
	}

	start("replica-a")
	rs.balanced("replica-a to hold every shard", "replica-a")
	pidA := strconv.Itoa(rs.pods["replica-a"].Pid())
	eventually(t, 2*time.Minute, "replica-a to resume every object and run its daemon", func() (bool, error) {
		resumes, daemons := rs.calls("resume"), rs.calls("daemon")
		for _, name := range names {
			if resumes[name][pidA] == 0 || daemons[name][pidA] == 0 {
				return false, fmt.Errorf("%s: resumed %d times, daemon started %d times in replica-a", name, resumes[name][pidA], daemons[name][pidA])
			}
		}
		return true, nil
	})

	start("replica-b")
	rs.balanced("the shards to rebalance to replica-b", "replica-a", "replica-b")
	owner := rs.holders()
	pidOf := map[string]string{"replica-a": pidA, "replica-b": strconv.Itoa(rs.pods["replica-b"].Pid())}
	eventually(t, 2*time.Minute, "every object's daemon to run on its shard's holder only, resumed there", func() (bool, error) {
		running, _ := daemonsRunning(t, rs.journal)
		resumes := rs.calls("resume")
		for _, name := range names {
			pid := pidOf[owner[conventions.Shard(ns, name, shardingShards)]]
			if got := running[ns+"/"+name]; !slices.Equal(got, []string{pid}) || resumes[name][pid] == 0 {
				return false, fmt.Errorf("%s's daemon runs in %v, resumed %d times in %s", name, got, resumes[name][pid], pid)
			}
		}
		return true, nil
	})

	resumes, daemons := rs.calls("resume"), rs.calls("daemon")
	kept := 0
	for _, name := range names {
		holder := owner[conventions.Shard(ns, name, shardingShards)]
		if holder == "replica-a" {
			kept++
		}
		// replica-a listed every object once, and replica-b the moved ones.
		for pod, pid := range pidOf {
			want := 0
			if pod == "replica-a" || holder == pod {
				want = 1
			}
			if got := resumes[name][pid]; got != want {
				t.Errorf("%s (held by %s) was resumed %d times in %s, want %d", name, holder, got, pod, want)
			}
			if got := daemons[name][pid]; got != want {
				t.Errorf("%s's daemon (held by %s) started %d times in %s, want %d", name, holder, got, pod, want)
			}
		}
	}
	if kept == 0 || kept == n {
		t.Fatalf("replica-a kept %d of %d objects: the handover moved no shard, or all", kept, n)
	}
	t.Logf("replica-a kept %d of %d objects, released %d shards", kept, n, rs.pods["replica-a"].Count("Released shard"))
	_, overlaps := daemonsRunning(t, rs.journal)
	for _, o := range overlaps {
		t.Error(o)
	}
	for name, pods := range rs.creations() {
		if len(pods) != 1 || pods[0] != "replica-0" {
			t.Errorf("%s was created by %v, want once by replica-0", name, pods)
		}
	}
	if got := slices.Sorted(maps.Keys(rs.creations())); !slices.Equal(got, names) {
		t.Errorf("created %v, want %v", got, names)
	}
	if withGlobal {
		// The daemons journal their replica's global index every second:
		// after the handover, both replicas' last words say every object.
		after := len(journalLines(t, rs.journal))
		eventually(t, time.Minute, "both replicas' global index to hold every object after the handover", func() (bool, error) {
			last := map[string]string{}
			for _, f := range journalLines(t, rs.journal)[after:] {
				if f[0] == "ret" && f[1] == "gindex" {
					last[rs.podOf(f[4])] = f[3]
				}
			}
			want := strconv.Itoa(n)
			return last["replica-a"] == want && last["replica-b"] == want, fmt.Errorf("the global index's size by replica: %v, want %d each", last, n)
		})
	}
}

// calls counts the handler's calls per object (its name) and process
// id, as the journal has them: "ret resume", "inv daemon" (a start).
func (s *shardedReplicas) calls(kind string) map[string]map[string]int {
	event := "ret"
	if kind == "daemon" {
		event = "inv"
	}
	out := map[string]map[string]int{}
	for _, f := range journalLines(s.t, s.journal) {
		if f[0] != event || f[1] != kind {
			continue
		}
		name := f[2][len(s.ns)+1:]
		if out[name] == nil {
			out[name] = map[string]int{}
		}
		out[name][f[4]]++
	}
	return out
}
