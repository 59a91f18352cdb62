package conventions

import (
	"hash/fnv"
	"strings"
)

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

// Shard is the shard of the object of this namespace ("" if cluster-scoped)
// and name in a sharding of this many shards: the FNV-1a (32-bit) hash of
// its key, "namespace/name" or "name" as client-go's cache keys it, modulo
// the shards. It needs nothing the API server adds at creation (the uid),
// so that a mutating webhook can label an object before it is stored, and
// the coordinating replica labels one it missed with the same shard.
func Shard(namespace, name string, shards int) int {
	if shards <= 1 {
		return 0
	}
	h := fnv.New32a()
	if namespace != "" {
		_, _ = h.Write([]byte(namespace + "/"))
	}
	_, _ = h.Write([]byte(name))
	return int(h.Sum32() % uint32(shards))
}
