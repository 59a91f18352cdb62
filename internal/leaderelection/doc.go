// Package leaderelection makes one replica of an operator serve while the
// others stand by, on a coordination.k8s.io/v1 Lease held with client-go's
// leaderelection package (as controller-runtime does): no consensus of our
// own, and the Lease is visible with kubectl.
//
// A replica that does not hold the Lease holds the reason Reason in the
// operator's pause switch, so the reactor watches nothing and runs no
// handlers, daemons or timers. A replica that loses the Lease stands by
// again and campaigns anew instead of exiting, and a replica that stops
// releases the Lease only after its reactor has finished, so that its
// successor starts at once but never beside a handler still running.
//
// Fencing: a leader stops renewing when it cannot renew within
// RenewDeadline, which is shorter than LeaseDuration, so it stands by
// before another replica can take the Lease after it expires. Handlers in
// flight when it loses the Lease are the at-least-once window that the
// difference of the two durations bounds in the normal case.
package leaderelection
