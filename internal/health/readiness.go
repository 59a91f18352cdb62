package health

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Readiness says whether the operator is ready (/readyz): its startup
// handlers have finished, the resources it serves at startup are all being
// watched, and every watch has processed its initial listing, indices
// included. Watches started later (CRDs that appear) count too while they
// list. A registered resource that does not exist makes it not ready too,
// unless relaxed: a typo in a resource's name is then a 503 naming it, not
// an operator that says ok and serves nothing. Not ready means 503, so that
// a Service or a rollout waits.
type Readiness struct {
	mu      sync.Mutex
	started bool            // the startup handlers have finished
	served  bool            // the startup's resources are being watched
	pending map[string]bool // watches whose initial listing is not done
	paused  []string        // why the operator stands by, if it does
	shards  *[]int          // the shards held, if sharded
	// missing are the registered resources that resolve to nothing;
	// blocking: they make the operator not ready.
	missing  []string
	blocking bool
}

// Unresolved: these registered resources resolve to nothing (described
// for the answer); blocking: the operator is not ready while any does.
func (r *Readiness) Unresolved(missing []string, blocking bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.missing, r.blocking = missing, blocking
}

// Shards: the shards this replica holds (sharding), said in the answer.
func (r *Readiness) Shards(held []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shards = &held
}

// Paused: the operator stands by (peering, leader election) for these
// reasons; none: it serves again. A standby operator stays ready: it has
// nothing to do until it serves, and a rolling update whose new replica
// waits for the old one's Lease would never finish if standing by were
// "not ready".
func (r *Readiness) Paused(reasons []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paused = reasons
}

// StartupDone: the startup handlers have finished.
func (r *Readiness) StartupDone() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = true
}

// Served: the resources of the startup are all being watched.
func (r *Readiness) Served() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.served = true
}

// WatchStarted: a watch lists; the operator is not ready until it has.
func (r *Readiness) WatchStarted(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		r.pending = map[string]bool{}
	}
	r.pending[key] = true
}

// WatchSynced: a watch has processed its initial listing.
func (r *Readiness) WatchSynced(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pending, key)
}

// WatchStopped: a watch is gone, listed or not.
func (r *Readiness) WatchStopped(key string) { r.WatchSynced(key) }

// Ready reports readiness and, when not ready, why.
func (r *Readiness) Ready() (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case !r.started:
		return false, "the startup handlers have not finished"
	case !r.served:
		return false, "the served resources are not watched yet"
	case len(r.pending) > 0:
		keys := make([]string, 0, len(r.pending))
		for k := range r.pending {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return false, "the initial listing is not complete for " + strings.Join(keys, ", ")
	case len(r.missing) > 0 && r.blocking:
		return false, unresolvedNote(r.missing)
	}
	return true, ""
}

// ServeHTTP answers 200 "ok" when ready, else 503 with the reason.
func (r *Readiness) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if ok, why := r.Ready(); !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "not ready: %s\n", why)
		return
	}
	r.mu.Lock()
	paused, shards, missing := r.paused, r.shards, r.missing
	r.mu.Unlock()
	var notes []string
	if len(missing) > 0 {
		notes = append(notes, unresolvedNote(missing))
	}
	if len(paused) > 0 {
		notes = append(notes, "standing by: "+strings.Join(paused, ", "))
	}
	if shards != nil {
		held := make([]string, len(*shards))
		for i, s := range *shards {
			held[i] = strconv.Itoa(s)
		}
		notes = append(notes, fmt.Sprintf("shards held: %d [%s]", len(held), strings.Join(held, " ")))
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "ok (%s)\n", strings.Join(notes, "; "))
		return
	}
	fmt.Fprintln(w, "ok")
}

func unresolvedNote(missing []string) string {
	return "unresolved resources: " + strings.Join(missing, "; ")
}
