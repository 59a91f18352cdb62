// Package component runs the parts of an operator (observability,
// activities, credentials, liveness, admission, the replica modes, the
// reactor) as one run, as controller-runtime's manager runs its Runnables.
//
// It exists so that the order the parts depend on is stated once, as a
// list, instead of being spread over deferred calls and stop functions:
// each part starts only once the parts before it are set up (so the
// credentials exist before the reactor needs them, and a replica stands by
// before the reactor watches), and stops only after the parts after it
// have returned (so Leases are released, and cleanup handlers run, only
// once the reactor has stopped). One part's failure stops them all, and
// Run returns only after every part has returned.
package component
