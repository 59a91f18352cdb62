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
// With a backlog (Config.Backlog), the first objects exist before the
// operator starts, and it is SIGKILLed once a tenth of them are handled:
// an operator's start on thousands of pending objects, after downtime or a
// failover, and a death amid it; what runs again after it is checked like
// any death's duplicates.
//
// make chaos runs cmd/chaos with 3000 objects, 2000 of them a backlog; the
// e2e suite runs 200, 100 of them a backlog.
package chaos
