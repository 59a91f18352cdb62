package sharding

import (
	"hash/fnv"
	"slices"
)

// Shard is the shard of an object: the FNV-1a (32-bit) hash of its uid,
// modulo the number of shards. The uid, unlike the name, never repeats,
// and does not change while the object lives, so an object stays in its
// shard for good.
func Shard(uid string, shards int) int {
	if shards <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	return int(h.Sum32() % uint32(shards))
}

// View is what a replica knows of the others when it balances.
type View struct {
	// Shards is the number of shards.
	Shards int
	// Me is this replica's identity.
	Me string
	// Members are the live replicas' identities (their membership Leases
	// are not expired); Me counts even if it is missing.
	Members []string
	// Holders are the shards' live holders, one per shard: "" if the
	// shard's Lease is missing, released or expired.
	Holders []string
}

// Plan is what a replica does about its shards in one round.
type Plan struct {
	// Acquire are free shards to take, in this order.
	Acquire []int
	// Release are shards to give up (their work stopped first).
	Release []int
}

// Quota is how many shards a member holds when the shards are balanced:
// with the members sorted, the first Shards%len(members) hold one more
// than the others, so that the quotas add up to Shards exactly and every
// member computes the same ones from the same members.
func Quota(shards int, members []string, me string) int {
	ms := members
	if !slices.Contains(ms, me) {
		ms = append(slices.Clone(ms), me)
	}
	ms = slices.Clone(ms)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	i := slices.Index(ms, me)
	q := shards / len(ms)
	if i < shards%len(ms) {
		q++
	}
	return q
}

// Balance decides what a replica does about its shards: a replica over
// its quota releases its highest shards; one under it acquires free
// shards, scanning from a point that depends on its rank so that replicas
// joining together contend for different shards first. Shards held by
// other live replicas are never taken: they come free only when their
// holder releases them or its Lease expires. Every replica that sees the
// same members converges on the quotas.
func Balance(v View) Plan {
	quota := Quota(v.Shards, v.Members, v.Me)
	var mine, free []int
	for i := range v.Shards {
		holder := ""
		if i < len(v.Holders) {
			holder = v.Holders[i]
		}
		switch holder {
		case v.Me:
			mine = append(mine, i)
		case "":
			free = append(free, i)
		}
	}
	var p Plan
	if len(mine) > quota {
		p.Release = slices.Clone(mine[quota:])
		slices.Reverse(p.Release)
		return p
	}
	want := quota - len(mine)
	if want == 0 || len(free) == 0 {
		return p
	}
	ms := slices.Clone(v.Members)
	if !slices.Contains(ms, v.Me) {
		ms = append(ms, v.Me)
	}
	slices.Sort(ms)
	ms = slices.Compact(ms)
	start := slices.Index(ms, v.Me) * v.Shards / len(ms)
	// The free shards, from the first at or after start, wrapping around.
	k, _ := slices.BinarySearch(free, start)
	for j := range free {
		if len(p.Acquire) == want {
			break
		}
		p.Acquire = append(p.Acquire, free[(k+j)%len(free)])
	}
	return p
}
