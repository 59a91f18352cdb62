//go:build e2e

package e2e

import (
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/e2e/cluster"
	"github.com/kopfgo/kopfgo/e2e/faultproxy"
)

// TestShardedReplicasUnderAPIFaults: three replicas with --shards talk to
// the API server through a proxy that answers part of their requests with
// the errors of a loaded server, and breaks their watches, while objects
// come in before the start (the coordinator labels them) and after: 429s
// with and without Retry-After on the objects' patches (the handlers'
// results and the label patches alike) and on the Leases' writes, 5xx on
// the Leases' writes and lists, every shard's watch reset or expired (410)
// now and then. Every object ends labelled with its key's shard and
// created once: none of these faults may cost a second handler call,
// since each is either refused before it is applied or a read. (A shard
// whose Lease could not be renewed for the whole renew deadline is lost
// and handed over; that too must keep each object handled once.)
func TestShardedReplicasUnderAPIFaults(t *testing.T) {
	const batch = 150
	ns := namespace(t)
	name := "kopfgo-faults"
	shared := cluster.Shared(t)
	proxy, err := faultproxy.Start(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, proxy.Kubeconfig(shared.Token, ns), 0o600); err != nil {
		t.Fatal(err)
	}
	rs := newShardedReplicas(t, ns, name)
	rs.env = append(rs.env, "KUBECONFIG="+kubeconfig)

	one := func(n int) func(*http.Request) bool { return func(*http.Request) bool { return rand.IntN(n) == 0 } }
	and := func(a, b func(*http.Request) bool) func(*http.Request) bool {
		return func(r *http.Request) bool { return a(r) && b(r) }
	}
	onLease := func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/leases") }
	onObjects := func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/kopfexamples") }
	rules := map[string]*faultproxy.Rule{
		"a patch 429 with Retry-After":    {Method: http.MethodPatch, Status: 429, RetryAfter: true, Match: and(onObjects, one(10))},
		"a patch 429 without Retry-After": {Method: http.MethodPatch, Status: 429, Match: and(onObjects, one(30))},
		"a Lease write 429":               {Method: http.MethodPut, Status: 429, Match: and(onLease, one(20))},
		"a Lease write 503":               {Method: http.MethodPut, Status: 503, Match: and(onLease, one(20))},
		"a Leases list 500":               {Method: http.MethodGet, Watch: -1, Status: 500, Match: and(onLease, one(8))},
		"a watch reset":                   {Method: http.MethodGet, Watch: 1, Action: faultproxy.Reset, Match: and(onObjects, one(4))},
		"a watch expired (410)":           {Method: http.MethodGet, Watch: 1, Action: faultproxy.WatchError, Status: 410, Match: and(onObjects, one(4))},
	}
	for _, r := range rules {
		proxy.Add(r)
	}

	created := 0
	create := func(prefix string) {
		createKexes(t, ns, prefix, batch)
		created += batch
	}

	began := time.Now()
	create("early")
	for _, pod := range []string{"replica-a", "replica-b", "replica-c"} {
		rs.start(pod)
	}
	create("late")
	t.Logf("%d objects created in %s", created, time.Since(began).Round(time.Second))
	waitBacklogHandled(t, dyn(t), ns, created, handled)
	t.Logf("all handled after %s", time.Since(began).Round(time.Second))
	for what, r := range rules {
		if r.Taken() == 0 {
			t.Errorf("%s was never injected", what)
		}
	}
	forwarded, injected := proxy.Counts()
	t.Logf("the proxy forwarded %d requests and answered %d with a fault", forwarded, injected)
	proxy.Clear()

	rs.checkLabelled()
	creations := rs.settledCreations()
	t.Logf("the handler calls settled after %s", time.Since(began).Round(time.Second))
	for obj, pods := range creations {
		if len(pods) != 1 {
			t.Errorf("%s was created by %v, want once", obj, pods)
		}
	}
	if got := len(creations); got != created {
		t.Errorf("%d objects have been created, want %d", got, created)
	}
	_, overlaps := daemonsRunning(t, rs.journal)
	for _, o := range overlaps {
		t.Error(o)
	}
	for pod, p := range rs.pods {
		for _, l := range p.Lines() {
			switch {
			case strings.Contains(l, "panic"):
				t.Errorf("%s: %s", pod, l)
			case strings.Contains(l, "Lost shard"):
				// Its Lease's writes failed for the whole renew deadline: it
				// may happen with faults this frequent, and the handover
				// that follows must keep the objects handled once.
				t.Logf("%s: %s", pod, l)
			}
		}
	}
}
