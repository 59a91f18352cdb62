// Package replicas holds the ways several replicas of an operator share
// the work, and the one idea they share: standing by. A replica stands by
// while any reason is held in its Standby; then it watches nothing, starts
// no handlers and runs no daemons or timers, and it serves again when the
// last reason is dropped. Each mode only adds and drops its own reason:
//
//   - peering (Kopf's): a peer of higher priority, or a freeze, holds
//     "name@namespace" (PeeringConfig.Reason);
//   - leader election: a replica that does not hold the Lease holds
//     ElectionReason;
//   - sharding: a replica that holds no shard holds ShardingReason.
//
// The reactor follows the Standby: it halts and resumes its watchers. The
// reasons are names, as in Kopf's operator pause (a set of named toggles),
// so that logs and readiness can say why the operator waits. A handover of
// shards needs no standby: the reactor follows the shards served (Serving)
// shard by shard, and reports when the shards taken out have stopped
// (Serving.Halted), which is what sharding waits for before it releases
// their Leases.
//
// The modes live together because they are one concern, the replica's
// part among its peers: they share the Standby, the Leases' timing and
// identity (Timing, HolderIdentity), and the rule that a replica leaves
// (releases its Leases, removes its peering record) only after its reactor
// has stopped, so that a successor never starts beside a handler still
// running here.
//
// # Leases
//
// Leader election and sharding hold coordination.k8s.io/v1 Leases: the
// three durations that pace a holder (Timing), their defaults and the rule
// between them, and a replica's identity as a holder are kept in one place,
// so that both modes keep the same defaults and the same checks.
//
// # Leader election
//
// One replica serves while the others stand by, on a Lease held with
// client-go's leaderelection package (as controller-runtime does): no
// consensus of our own, and the Lease is visible with kubectl.
//
// A replica that loses the Lease stands by again and campaigns anew
// instead of exiting, and a replica that stops releases the Lease only
// after its reactor has finished, so that its successor starts at once but
// never beside a handler still running.
//
// Fencing: a leader stops renewing when it cannot renew within
// RenewDeadline, which is shorter than LeaseDuration, so it stands by
// before another replica can take the Lease after it expires. Handlers in
// flight when it loses the Lease are the at-least-once window that the
// difference of the two durations bounds in the normal case.
//
// # Sharding
//
// Sharding spreads the objects of every served resource over the replicas
// of an operator, all active: active-active sharding, on Leases written
// with client-go's typed client.
//
// An object belongs to the shard its label names: "shard.kopfgo.dev/<name>"
// (conventions.ShardLabel), valued FNV-1a-32 of "namespace/name" mod N
// (conventions.Shard; the key, not the uid, which the API server sets only
// after the mutating webhooks, so that a webhook can label an object at
// its creation by the same rule as the coordinator). A replica
// serves the objects of the shards whose Leases it holds,
// "<name>-shard-<i>", and no other: it watches each shard apart, per
// resource and namespace, with the label selector
// "shard.kopfgo.dev/<name> in (i)" (ShardSet), so the API server sends it
// nothing of the other shards, its CPU and memory for the watch shrink
// with its share, and a shard starts and stops alone; indices are per
// replica too. A resource with a global index is the exception: it is
// watched whole, the others' objects going to the global indices alone,
// and its one watch changes in place which shards it serves, so that a
// handover leaves its kept shards alone too.
//
// The holder of shard 0 coordinates: it also watches the objects of no
// shard, "shard.kopfgo.dev/<name> notin (0, ..., N-1)" (no label, or a
// number left by a sharding with more shards), and labels each with one
// merge patch (its uid as a precondition) through the API's flow control.
// When the operator manages its webhook configurations, its mutating
// webhook (internal/admission's ShardLabelling) labels new objects at
// creation, and the coordinator writes only for the objects it missed:
// those created before it, while the operator was out of reach (the
// webhook's failurePolicy is Ignore), or with generateName (no name yet at
// admission, so no key to hash).
// A labelled object leaves that watch and enters its holder's, which
// handles it; the coordinator only labels. The label is never changed
// once it names a shard of this many, so an object never changes shard,
// and a rebalance moves Leases, not labels: no object is relabelled. The
// label is not part of an object's essence (diffbase), so labelling an
// object handled before is no change of it.
//
// Each replica also holds a membership Lease, "<name>-member-<hash of its
// identity>", renewed with its shards; all the Leases carry the label
// kopfgo.dev/sharding=<name> (ShardingLabel), so that one list reads them.
// Every retry period a replica lists them, renews its own, and balances
// (Balance, a pure function): with the live members sorted, the first N mod
// M hold ceil(N/M) shards and the others floor(N/M) (Quota). A replica over
// its quota releases its highest shards; one under it acquires free shards
// (never one held by a live replica). A Lease is live while it keeps
// changing: as in client-go's leader election, a replica judges expiry by
// its own clock, a lease duration after the Lease was renewed. When it was
// renewed is its renewTime where that falls between the list that saw it
// change and the list before (the clocks agree), else the nearer of the
// two, and never more than half of the lease duration's excess over the
// renew deadline before now: a holder whose clock lags still gives the
// Lease up (its renew deadline) before the others take it. Client-go dates
// a change by when it saw it, which added up to a retry period to every
// handover. A replica wakes when the next Lease it knows of expires, not
// at its next tick. When a replica dies, its Leases expire and the others
// take its shards a lease duration after its last renewal (the bench's
// scale-out handover measures it); when one joins, the others
// see its membership and release shards down to their quotas, and it
// acquires them.
//
// A shard is never served by two replicas at once, because a Lease is
// released only after its work has stopped, and a shard is served only
// after its Lease is acquired (fencing by Lease):
//
//  1. acquire: the free shards' Leases are written, each with the
//     resourceVersion read, so that of two replicas racing for one, one
//     conflicts and gives up;
//  2. swap: the shards served change (Serving.Serve): lost and released
//     shards out, acquired ones in. The reactor starts the watchers of
//     the shards acquired, which list them, and stops those of the shards
//     out; the watchers of the shards kept go on untouched: their objects
//     are not listed again, their resume handlers not called again, their
//     daemons and timers run on;
//  3. halt: the replica waits until the reactor reports the change
//     halted (Serving.WaitHalted): the stopped watchers have exited, their
//     handlers in flight finished, their objects' daemons and timers
//     stopped and returned, and the replica's indices have forgotten their
//     objects; the Leases held are renewed meanwhile, and a shard lost
//     then is taken out too (step 2 again);
//  4. release: the released shards' Leases are written with no holder.
//     The new holder of a released shard lists it only after acquiring its
//     Lease, which comes free only now.
//
// A replica holds ShardingReason in the Standby while it holds no shard:
// it stands by, not ready. A replica that cannot renew a Lease within the
// renew deadline counts the shard lost and stops its work at once (steps
// 2, 3); the others take it only a lease duration after its last renewal,
// which is later. Handlers in flight when a shard is lost that way are the
// at-least-once window that the difference of the two durations bounds, as
// with leader election. On exit, the operator releases every Lease after
// its reactor has stopped and deletes its membership Lease.
//
// # Peering
//
// Kopf's peering: operators that share a peering object (a KopfPeering in
// a namespace, or a ClusterKopfPeering) keep their records in its status,
// and an operator that sees a live peer of higher priority, or of the same
// priority, stands by until that peer is gone (compat: peering-priorities).
// The records are Kopf's, field by field, so that Kopf and kopfgo
// operators in one peering obey each other:
//
//	status:
//	  <identity>: {priority: 0, lifetime: 60, lastseen: "2026-11-24T03:58:38.123456+00:00"}
//
// A record is live until lastseen+lifetime. Each operator renews its own
// record a few seconds before it expires (Kopf's schedule), removes it when
// it stops, and removes the records of dead peers when it sees them.
package replicas
