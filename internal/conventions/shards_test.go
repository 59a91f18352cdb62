package conventions

import (
	"fmt"
	"testing"
)

// The hashes below were computed apart from Go's hash/fnv (FNV-1a, 32 bits,
// offset basis 0x811c9dc5, prime 16777619), so that a change of the rule,
// which would move objects labelled at creation and by the coordinator to
// different shards, fails here.
func TestShardIsFNV1aOfTheKeyModuloTheShards(t *testing.T) {
	cases := []struct {
		namespace, name string
		shards          int
		want            int
	}{
		{"", "", 7, 0x811c9dc5 % 7},
		{"", "a", 10, 0xe40c292c % 10},
		{"", "kex-1", 12, 0x4cc1f5e5 % 12},
		{"default", "kex-1", 12, 0x4cd08223 % 12},
		{"default", "kex-1", 1, 0},
		{"default", "kex-1", 0, 0},
	}
	for _, c := range cases {
		if got := Shard(c.namespace, c.name, c.shards); got != c.want {
			t.Errorf("Shard(%q, %q, %d) = %d, want %d", c.namespace, c.name, c.shards, got, c.want)
		}
	}
}

// Names as people and generateName make them, numbered or random, spread
// over the shards about evenly, whether the shards are a power of two (the
// hash's low bits alone) or not.
func TestShardSpreadsNamesEvenly(t *testing.T) {
	const n = 8000
	for _, shards := range []int{3, 8, 10} {
		for _, form := range []string{"kex-%d", "web-%05x", "job-%d-worker"} {
			counts := make([]int, shards)
			for i := range n {
				counts[Shard(fmt.Sprintf("team-%d", i%5), fmt.Sprintf(form, i), shards)]++
			}
			for s, c := range counts {
				if c < n/shards*8/10 || c > n/shards*12/10 {
					t.Errorf("%d shards, names %q: shard %d has %d of %d: want about %d; all: %v", shards, form, s, c, n, n/shards, counts)
				}
			}
		}
	}
}
