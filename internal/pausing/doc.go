// Package pausing holds the reasons an operator stands by instead of
// serving: a peer of higher priority or a freeze (peering), a Lease held by
// another replica (leader election). While any reason holds, the operator
// watches nothing, starts no handlers and runs no daemons or timers; it
// serves again when the last reason is dropped. It is Kopf's operator pause
// (a set of named toggles) with the reasons as names, so that logs and
// readiness can say why the operator waits.
//
// It exists apart from the reactor because several parts pause the same
// operator independently, and each must only add and drop its own reason.
package pausing
