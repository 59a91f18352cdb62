// Package chaos puts an operator under load and under fire at once, and
// checks what Kopf promises: every object reaches its final state, nothing is
// left with the finalizer, every handler succeeds at least once per change,
// a handler that succeeded runs again only when a fault struck between its
// return and the persisting of its success, daemons never run twice at once
// for one object, and nothing panics.
//
// Run starts a cluster of its own, builds the operator of
// e2e/operators/chaos once, and runs it behind a fault proxy
// (e2e/faultproxy) with a journal of every handler call outside the process
// (an O_APPEND file, one write per line). N objects go through creation, an
// update and deletion, each step waiting for the previous one to be handled,
// while faults are injected on a schedule: SIGKILL of the operator
// (restarted at once), SIGTERM, a restart of kube-apiserver, a restart of
// etcd, stalled, reset and dropped connections, 429 and 5xx answers. Fault
// markers go into the same journal, so its order shows which fault, if any,
// lies between a handler's success and its repetition. The cluster is
// listed whenever the operator dies, before it is started again: a handler
// that runs again after a death must be one whose success was not yet on
// its object then.
//
// After the chaos round, the same N objects go through twice more without
// faults (Config.Rounds), on the process that finished the chaos round:
// its live heap after the third round must be within 10% (and 512 KiB) of
// its heap after the second (report.go, memory, says why it is not
// compared with the fresh process of the start).
//
// make chaos runs cmd/chaos with 2000 objects; the e2e suite runs 200.
package chaos
