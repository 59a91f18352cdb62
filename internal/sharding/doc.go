// Package sharding spreads the objects of every served resource over the
// replicas of an operator, all active: active-active sharding, on
// coordination.k8s.io/v1 Leases written with client-go's typed client (no
// consensus of our own; the Leases are visible with kubectl).
//
// # Shards and ownership
//
// An object belongs to shard FNV-1a-32(uid) mod N (Shard). A replica serves
// the objects of the shards whose Leases it holds, "<name>-shard-<i>", and
// no other: the reactor's watchers drop the others' objects before
// indexing or handling them (reactor.Config.Owns), so indices are per
// replica too. The uid never changes, so an object never changes shard.
//
// # Membership and balance
//
// Each replica also holds a membership Lease, "<name>-member-<hash of its
// identity>", renewed with its shards; all the Leases carry the label
// kopfgo.dev/sharding=<name>, so that one list reads them. Every retry
// period a replica lists them, renews its own, and balances (Balance, a
// pure function): with the live members sorted, the first N mod M hold
// ceil(N/M) shards and the others floor(N/M) (Quota). A replica over its
// quota releases its highest shards; one under it acquires free shards
// (never one held by a live replica). A Lease is live while it keeps
// changing: as in client-go's leader election, a replica judges expiry by
// its own clock, a lease duration after it last saw the Lease change.
// When a replica dies, its Leases expire and the others take its shards
// within a lease duration and a retry period; when one joins, the others
// see its membership and release shards down to their quotas, and it
// acquires them.
//
// # Handover order (fencing by Lease)
//
// A shard is never served by two replicas at once, because a Lease is
// released only after its work has stopped, and a shard is served only
// after its Lease is acquired:
//
//  1. acquire: the free shards' Leases are written, each with the
//     resourceVersion read, so that of two replicas racing for one, one
//     conflicts and gives up;
//  2. halt: the replica holds Reason in the operator's pause switch and
//     waits until the reactor has halted (pausing.Switch.WaitHalted):
//     every watcher stopped, handlers in flight finished, daemons and
//     timers stopped and returned; the Leases held are renewed meanwhile;
//  3. swap: the set of shards served changes (lost and released shards
//     out, acquired ones in);
//  4. release: the released shards' Leases are written with no holder;
//  5. resume: the pause reason is dropped if any shard is held, and the
//     reactor lists everything afresh, serving the new set (a replica with
//     no shard stands by).
//
// A replica that cannot renew a Lease within the renew deadline counts the
// shard lost and stops its work at once (steps 2, 3, 5); the others take it
// only a lease duration after its last renewal, which is later. Handlers
// in flight when a shard is lost that way are the at-least-once window that
// the difference of the two durations bounds, as with leader election.
// On exit, the operator releases every Lease after its reactor has stopped
// and deletes its membership Lease.
//
// A change of the shards served restarts all of the replica's watchers,
// not only the moved shards': daemons and timers of the shards it keeps are
// stopped and started again, and resume handlers run again for its objects.
package sharding
