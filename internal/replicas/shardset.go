package replicas

import (
	"slices"
	"strconv"

	"github.com/kopfgo/kopfgo/internal/conventions"
)

// ShardSet is what a replica serves of a sharding at one time: the shards
// whose Leases it holds. Objects carry their shard in a label (Label), so
// that a replica's watches select its shards' objects on the API server
// and it never receives the others' (Selector). An object without the
// label, or with one naming no shard of this many, belongs to no replica
// until the coordinator, the holder of shard 0, labels it (Unassigned,
// Assign).
type ShardSet struct {
	// Label is the label's key: conventions.ShardLabel of the operator's
	// name.
	Label string
	// Shards is the number of shards.
	Shards int
	// Held are the shards served, sorted.
	Held []int
}

// Selector selects the objects of the shards held: "label in (0, 3, 6)";
// no shard held selects nothing a replica should watch (it stands by).
func (s ShardSet) Selector() string { return s.Label + " in (" + ints(s.Held) + ")" }

// Unassigned selects the objects that belong to no shard: without the
// label, or with a value that is not a shard's number (left by a sharding
// with more shards). Only the coordinator watches them.
func (s ShardSet) Unassigned() string {
	all := make([]int, s.Shards)
	for i := range all {
		all[i] = i
	}
	return s.Label + " notin (" + ints(all) + ")"
}

// Coordinates tells whether this replica labels the unassigned objects:
// it holds shard 0. A Lease fences it, so there is one coordinator at a
// time; and two would write the same labels anyway.
func (s ShardSet) Coordinates() bool { return slices.Contains(s.Held, 0) }

// Owns tells whether an object of these labels belongs to a shard held.
func (s ShardSet) Owns(labels map[string]string) bool {
	v, ok := labels[s.Label]
	if !ok {
		return false
	}
	i, err := strconv.Atoi(v)
	return err == nil && slices.Contains(s.Held, i)
}

// Assign is the label's value for the object of this namespace ("" if
// cluster-scoped) and name: its shard by conventions.Shard, the rule that
// the mutating webhook labelling objects at creation follows too, so that
// every replica and the webhook assign an object the same shard.
func (s ShardSet) Assign(namespace, name string) string {
	return strconv.Itoa(conventions.Shard(namespace, name, s.Shards))
}

// shardSet is the set of a sharding named name.
func shardSet(name string, shards int, held []int) ShardSet {
	return ShardSet{Label: conventions.ShardLabel(name), Shards: shards, Held: held}
}
