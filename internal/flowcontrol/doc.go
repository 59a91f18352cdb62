// Package flowcontrol holds back the operator's own requests to an API
// server: one Gate per API server, shared by every client the operator
// builds for it, lets a bounded number of requests be in flight and makes
// the rest wait in line.
//
// Without it, a backlog (thousands of objects needing a pass at once: a
// start after downtime, a failover, a shard handed over) sent every object's
// patches at once; the API server answered with 504s and 429s, retries
// piled onto the load, and handlers whose outcome could not be written ran
// again. Kopf escapes this only by its HTTP client's connection pool.
//
// # The limit
//
// Writes (POST, PUT, PATCH, DELETE) and reads (GET and LIST) have limits of
// their own, so that a flood of patches never starves the lists that
// (re)start watches. Watch requests pass ungated: a watch is in flight for
// minutes and would hold a slot for nothing; their outcomes still tell the
// gate whether the server is reachable. Requests of coordination.k8s.io
// Leases (leader election, sharding) pass ungated too, and are observed
// alike: a Lease renewed every few seconds must not wait in line behind a
// backlog's patches past its renew deadline, or the replica would give its
// Lease, and its backlog, up at the worst moment (the API server's own
// priority and fairness keeps leader election apart for the same reason).
//
// Each limit follows additive increase and multiplicative decrease, as TCP's
// congestion window does: while responses come back well and the limit is
// in use (at least half of it in flight or waiting), it grows by one per
// request below the slow-start threshold and by one per round of `limit`
// requests above it; a 429, a 500/502/503/504, or a client-side timeout
// halves it, and latency well above its long-term level cuts it by a tenth, but
// not below its initial value (the server still answers, only slower). A
// decrease is applied at most once per round: only requests started after
// the last decrease can cause another, as TCP reduces its window once per
// window of loss. Latency is judged for writes only: a LIST's latency
// follows the collection's size more than the server's load. "Well above"
// compares a smoothed latency of the last few requests (TCP's 1/8
// weighting) with a long-term one (1/512: the last few hundred requests),
// as Netflix's gradient limit does: beyond 1.5 times the long-term latency
// plus 50ms is a rise, congestion building up; a latency that rose and then
// holds is the server's pace at this load, and the limit grows again once
// the long-term latency has caught up with it. A baseline of the smallest
// latency seen (the first design) judged every request of a busy server
// against one lucky idle one: on a 2-core machine a backlog's limit then
// sat at its initial 16 while more requests in flight drained it faster
// (the handover between one request and the next waiting one costs a
// scheduling delay that a plain client's 16 workers do not pay). The 50ms
// are there so that the noise of millisecond requests does not
// count. Nothing is random: the same responses at the same (fake) times give
// the same limits.
//
// A slot is held until the response's headers arrive, not until its body is
// read: a body that a caller never closes must not hold a slot forever, and
// the bodies the operator reads (patch results, lists) are read at once.
//
// # Retry-After
//
// A 429 (or a 5xx) carrying Retry-After closes its class of requests for
// everyone until then. client-go's rest client retries such responses by
// itself (checkWait in rest/with_retry.go: a 429 or any 5xx with a
// Retry-After in seconds, up to 10 times), sleeping Retry-After before it
// sends again; that sleep starts when the response has come back, as the
// closure does, so the retry arrives at the gate once the gate has reopened
// and passes (behind requests already in line) instead of waiting a second
// Retry-After. A 429 with Retry-After is the server steering its clients,
// not failing: it halves the limit but does not count toward an outage.
// APF's response headers name the FlowSchema and priority level that
// rejected a request by their UIDs only: the gate does not act on them, and
// names the priority level's UID in the outage warning when a 429 brought
// it on, for the cluster's administrator to find.
//
// # Outages
//
// Three failures in a row (connection refused or reset, timeouts, 5xx,
// 429s without Retry-After), with no success between, mark the server as
// unreachable or overloaded: one WARNING says so. From then on the gate
// lets one request through at a time as a probe, the next one only after a
// backoff (0.5s doubling to 8s), and every other request waits in line
// instead of failing and retrying on its own. The first success, a probe's
// or a watch's, reopens the gate (one INFO line with how long it took, how
// many requests waited and how many failed) with limits that restart at one
// and grow back by slow start to their initial values.
//
// An outcome tells about the server as it was when its request was sent:
// the gate numbers the server's episodes (an outage starting, an outage
// ending) and judges a request only by the episode it was sent in. A
// kube-apiserver that shuts down refuses new connections while it still
// answers the requests it has: those answers, coming after the outage
// began, do not end it (the e2e outage test once logged two outages for
// one so), and a watch that failed while the server was away does not count
// toward a new outage after it is back.
//
// The gate starts nothing: waiting requests wait on their own goroutines and
// timers, so there is nothing to run or stop, and a nil *Gate lets every
// request through.
package flowcontrol
