package replicas

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kopfgo/kopfgo/internal/conventions"
)

// The selectors are what the API server parses: a replica's selects its
// shards' objects, the coordinator's the objects of no shard, and the two
// never overlap.
func TestShardSetSelectors(t *testing.T) {
	set := shardSet("op", 4, []int{0, 2})
	if got, want := set.Selector(), "shard.kopfgo.dev/op in (0, 2)"; got != want {
		t.Errorf("Selector() = %q, want %q", got, want)
	}
	mine, err := labels.Parse(set.Selector())
	if err != nil {
		t.Fatal(err)
	}
	unassigned, err := labels.Parse(set.Unassigned())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		labels           map[string]string
		mine, unassigned bool
	}{
		{map[string]string{"shard.kopfgo.dev/op": "0"}, true, false},
		{map[string]string{"shard.kopfgo.dev/op": "2"}, true, false},
		{map[string]string{"shard.kopfgo.dev/op": "1"}, false, false},
		{map[string]string{"shard.kopfgo.dev/op": "3"}, false, false},
		{map[string]string{"shard.kopfgo.dev/op": "7"}, false, true}, // of a sharding with more shards
		{map[string]string{"shard.kopfgo.dev/op": "x"}, false, true},
		{map[string]string{"shard.kopfgo.dev/other": "0"}, false, true},
		{nil, false, true},
	} {
		if got := mine.Matches(labels.Set(c.labels)); got != c.mine {
			t.Errorf("%v: selected by the replica's selector: %v, want %v", c.labels, got, c.mine)
		}
		if got := set.Owns(c.labels); got != c.mine {
			t.Errorf("%v: Owns = %v, want %v", c.labels, got, c.mine)
		}
		if got := unassigned.Matches(labels.Set(c.labels)); got != c.unassigned {
			t.Errorf("%v: selected as unassigned: %v, want %v", c.labels, got, c.unassigned)
		}
	}
	if !set.Coordinates() || shardSet("op", 4, []int{1, 3}).Coordinates() {
		t.Error("the holder of shard 0, and only it, coordinates")
	}
}

// Assign labels an object with its key's shard, the same on every replica
// and in the webhook (conventions.Shard).
func TestShardSetAssign(t *testing.T) {
	set := shardSet("op", 12, nil)
	for _, key := range [][2]string{{"", "a"}, {"ns", "a"}, {"default", "kex-1"}} {
		if got, want := set.Assign(key[0], key[1]), conventions.Shard(key[0], key[1], 12); got != itoa(want) {
			t.Errorf("Assign(%q, %q) = %s, want %d", key[0], key[1], got, want)
		}
	}
}

func itoa(i int) string { return ints([]int{i}) }

// The operator's name names the shard label, so it must be a label's name.
func TestShardingConfigNameMustNameALabel(t *testing.T) {
	c := ShardingConfig{Shards: 4, Namespace: "ops", Name: strings.Repeat("n", 64)}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "shard label") {
		t.Errorf("a name of 64 characters: %v, want an error about the shard label", err)
	}
	c.Name = "kopfgo-operator"
	if err := c.Validate(); err != nil {
		t.Errorf("the default name: %v", err)
	}
}
