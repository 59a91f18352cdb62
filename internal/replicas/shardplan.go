package replicas

import "slices"

// ShardView is what a replica knows of the others when it balances.
type ShardView struct {
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

// ShardPlan is what a replica does about its shards in one round.
type ShardPlan struct {
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
	ms := sortedMembers(members, me)
	i := slices.Index(ms, me)
	q := shards / len(ms)
	if i < shards%len(ms) {
		q++
	}
	return q
}

// sortedMembers are the members and me, sorted, without repeats.
func sortedMembers(members []string, me string) []string {
	ms := append(slices.Clone(members), me)
	slices.Sort(ms)
	return slices.Compact(ms)
}

// Balance decides what a replica does about its shards: a replica over
// its quota releases its highest shards; one under it acquires free
// shards, every M-th from its rank first (M members), so that replicas
// taking free shards together contend for different ones. Shards held by
// other live replicas are never taken: they come free only when their
// holder releases them or its Lease expires. Every replica that sees the
// same members converges on the quotas.
func Balance(v ShardView) ShardPlan {
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
	var p ShardPlan
	if len(mine) > quota {
		p.Release = slices.Clone(mine[quota:])
		slices.Reverse(p.Release)
		return p
	}
	want := quota - len(mine)
	if want == 0 || len(free) == 0 {
		return p
	}
	ms := sortedMembers(v.Members, v.Me)
	rank, m := slices.Index(ms, v.Me), len(ms)
	// Each member prefers every m-th free shard from its rank on, so that
	// replicas taking free shards at once (a dead replica's, or all at the
	// start) mostly take different ones; then any other free shard.
	var order []int
	for k := rank; k < len(free); k += m {
		order = append(order, free[k])
	}
	for k, s := range free {
		if k%m != rank {
			order = append(order, s)
		}
	}
	p.Acquire = order[:min(want, len(order))]
	return p
}
