package replicas

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestQuotasAddUpToTheShards(t *testing.T) {
	for _, shards := range []int{1, 2, 3, 7, 8, 16} {
		for m := 1; m <= 5; m++ {
			var members []string
			for i := range m {
				members = append(members, fmt.Sprintf("r%d", i))
			}
			sum, lo, hi := 0, shards, 0
			for _, me := range members {
				q := Quota(shards, members, me)
				sum += q
				lo, hi = min(lo, q), max(hi, q)
			}
			if sum != shards || hi-lo > 1 {
				t.Errorf("%d shards, %d members: quotas sum to %d (want %d), spread %d..%d", shards, m, sum, shards, lo, hi)
			}
		}
	}
}

func TestBalance(t *testing.T) {
	cases := []struct {
		name    string
		view    ShardView
		acquire []int
		release []int
	}{
		{"alone: takes every shard", ShardView{Shards: 4, Me: "a", Holders: []string{"", "", "", ""}}, []int{0, 1, 2, 3}, nil},
		{"alone, not yet a visible member", ShardView{Shards: 3, Me: "a", Members: nil, Holders: nil}, []int{0, 1, 2}, nil},
		{"at quota: nothing", ShardView{Shards: 4, Me: "a", Members: []string{"a", "b"}, Holders: []string{"a", "a", "b", "b"}}, nil, nil},
		{"a starter takes every M-th free shard from its rank", ShardView{Shards: 6, Me: "b", Members: []string{"a", "b", "c"}, Holders: []string{"", "", "", "", "", ""}}, []int{1, 4}, nil},
		{"then any free shard", ShardView{Shards: 6, Me: "c", Members: []string{"a", "b", "c"}, Holders: []string{"", "a", "a", "b", "b", ""}}, []int{0, 5}, nil},
		{"survivors split a dead replica's shards", ShardView{Shards: 12, Me: "b", Members: []string{"a", "b"}, Holders: []string{"a", "a", "a", "a", "b", "b", "b", "b", "", "", "", ""}}, []int{9, 11}, nil},
		{"a joiner never takes held shards", ShardView{Shards: 4, Me: "c", Members: []string{"a", "b", "c"}, Holders: []string{"a", "a", "b", "b"}}, nil, nil},
		{"over quota after a join: release the highest", ShardView{Shards: 6, Me: "a", Members: []string{"a", "b", "c"}, Holders: []string{"a", "a", "a", "a", "a", "a"}}, nil, []int{5, 4, 3, 2}},
		{"a dead replica's expired shards are taken", ShardView{Shards: 6, Me: "a", Members: []string{"a", "b"}, Holders: []string{"a", "a", "", "", "b", "b"}}, []int{2}, nil},
		{"3 replicas, 8 shards: the first two get 3", ShardView{Shards: 8, Me: "a", Members: []string{"c", "b", "a"}, Holders: []string{"a", "a", "", "b", "b", "b", "c", "c"}}, []int{2}, nil},
		{"3 replicas, 8 shards: the last gets 2", ShardView{Shards: 8, Me: "c", Members: []string{"c", "b", "a"}, Holders: []string{"a", "a", "c", "b", "b", "b", "c", "c"}}, nil, []int{7}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Balance(c.view)
			if !slices.Equal(p.Acquire, c.acquire) || !slices.Equal(p.Release, c.release) {
				t.Errorf("Balance = acquire %v, release %v; want acquire %v, release %v", p.Acquire, p.Release, c.acquire, c.release)
			}
		})
	}
}

// Replicas that balance in turn, each seeing the others' Leases, converge
// on their quotas from any start, every shard held by exactly one.
func TestBalanceConverges(t *testing.T) {
	for _, start := range [][]string{
		{"", "", "", "", "", "", "", ""},
		{"a", "a", "a", "a", "a", "a", "a", "a"},
		{"a", "a", "a", "a", "b", "b", "b", "b"},
	} {
		members := []string{"a", "b", "c"}
		holders := slices.Clone(start)
		for round := range 5 {
			for _, me := range members {
				p := Balance(ShardView{Shards: len(holders), Me: me, Members: members, Holders: holders})
				for _, s := range p.Release {
					holders[s] = ""
				}
				for _, s := range p.Acquire {
					if holders[s] != "" {
						t.Fatalf("round %d: %s acquires shard %d held by %s", round, me, s, holders[s])
					}
					holders[s] = me
				}
			}
		}
		count := map[string]int{}
		for _, h := range holders {
			count[h]++
		}
		if count[""] != 0 || count["a"] != 3 || count["b"] != 3 || count["c"] != 2 {
			t.Errorf("from %v: holders %v, want 3, 3 and 2 with none free", start, holders)
		}
	}
}

func TestShardingConfigValidateNamesWhatIsWrong(t *testing.T) {
	cases := []struct {
		name string
		cfg  ShardingConfig
		want string // a substring of the error; "": valid
	}{
		{"defaults", ShardingConfig{Name: "op", Namespace: "ns", Shards: 4}, ""},
		{"no shards", ShardingConfig{Name: "op", Namespace: "ns"}, "--shards"},
		{"no name", ShardingConfig{Namespace: "ns", Shards: 4}, "--shards-name"},
		{"no namespace", ShardingConfig{Name: "op", Shards: 4}, "--shards-namespace"},
		// No jitter: Timing's test has the other durations.
		{"retry period too long", ShardingConfig{Name: "op", Namespace: "ns", Shards: 4, Timing: Timing{RetryPeriod: 10 * time.Second}}, "renew deadline (10s) must be longer than the retry period (10s)"},
		{"retry period short enough", ShardingConfig{Name: "op", Namespace: "ns", Shards: 4, Timing: Timing{RetryPeriod: 9 * time.Second}}, ""},
	}
	for _, c := range cases {
		switch err := c.cfg.Validate(); {
		case c.want == "" && err != nil:
			t.Errorf("%s: Validate: %v, want none", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: Validate: %v, want it to say %q", c.name, err, c.want)
		}
	}
}

func TestLeaseNames(t *testing.T) {
	if got := ShardLease("op", 11); got != "op-shard-11" {
		t.Errorf("ShardLease = %q", got)
	}
	a, b := MemberLease("op", "pod-1_ab12"), MemberLease("op", "pod-2_cd34")
	if !strings.HasPrefix(a, "op-member-") || len(a) != len("op-member-")+8 || a == b {
		t.Errorf("MemberLease: %q and %q, want op-member-<8 hex digits>, different", a, b)
	}
}
