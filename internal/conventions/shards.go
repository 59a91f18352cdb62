package conventions

import "strings"

// ShardLabelPrefix is the prefix of the label that names an object's shard
// when an operator shards its objects: "shard.kopfgo.dev/<operator's
// name>", valued with the shard's number. The label is the sharding's own
// state, not the object's: it is no essential change (diffbase leaves it
// out of the essence), as operators' annotations are none.
const ShardLabelPrefix = "shard.kopfgo.dev"

// ShardLabel is the key of the label naming an object's shard in the
// sharding of the operator of this name.
func ShardLabel(name string) string { return ShardLabelPrefix + "/" + name }

// IsShardLabel tells whether a label key names a shard of some operator's
// sharding.
func IsShardLabel(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	return ok && prefix == ShardLabelPrefix
}
