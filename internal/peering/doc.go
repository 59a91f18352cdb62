// Package peering is Kopf's peering: operators that share a peering object
// (a KopfPeering in a namespace, or a ClusterKopfPeering) keep their records
// in its status, and an operator that sees a live peer of higher priority,
// or of the same priority, stands by until that peer is gone (compat:
// peering-priorities). The records are Kopf's, field by field, so that Kopf
// and kopfgo operators in one peering obey each other:
//
//	status:
//	  <identity>: {priority: 0, lifetime: 60, lastseen: "2026-11-24T03:58:38.123456+00:00"}
//
// A record is live until lastseen+lifetime. Each operator renews its own
// record a few seconds before it expires (Kopf's schedule), removes it when
// it stops, and removes the records of dead peers when it sees them.
//
// It exists apart from the reactor because it is a separate conversation
// with the API server whose only output is the operator's pause switch.
package peering
