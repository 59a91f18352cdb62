package metrics

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

func TestMetrics(t *testing.T) {
	m := New()
	m.HandlerCalled("create_fn", "create", Success, 0, 10*time.Millisecond)
	m.HandlerCalled("create_fn", "create", Temporary, 0, time.Millisecond)
	m.HandlerCalled("create_fn", "create", Success, 1, time.Millisecond)
	m.Busy(1)
	m.Busy(1)
	m.Busy(-1)
	m.WatchEvent("kopfexamples.v1.kopf.dev", "ADDED")
	m.WatchRestart("kopfexamples.v1.kopf.dev")
	m.EventPosted(nil)
	m.EventPosted(errors.New("forbidden"))
	m.Daemons(func() int { return 3 })
	clientmetrics.RequestLatency.Observe(context.Background(), "patch", url.URL{}, time.Millisecond)
	clientmetrics.RequestResult.Increment(context.Background(), "200", "PATCH", "host")

	want := `
# HELP kopfgo_handler_invocations_total Calls of handlers, by handler id, cause (create, update, delete, resume, field…; event; daemon, timer) and outcome (success, temporary, permanent, exception).
# TYPE kopfgo_handler_invocations_total counter
kopfgo_handler_invocations_total{cause="create",handler="create_fn",outcome="success"} 2
kopfgo_handler_invocations_total{cause="create",handler="create_fn",outcome="temporary"} 1
# HELP kopfgo_handler_retries_total Calls of handlers that were retries of an earlier failed call, by handler id and cause.
# TYPE kopfgo_handler_retries_total counter
kopfgo_handler_retries_total{cause="create",handler="create_fn"} 1
# HELP kopfgo_objects_in_flight Objects being processed right now.
# TYPE kopfgo_objects_in_flight gauge
kopfgo_objects_in_flight 1
# HELP kopfgo_events_posted_total Kubernetes Events posted, by result (posted, failed).
# TYPE kopfgo_events_posted_total counter
kopfgo_events_posted_total{result="failed"} 1
kopfgo_events_posted_total{result="posted"} 1
# HELP kopfgo_daemons_running Daemons and timers running, across all objects.
# TYPE kopfgo_daemons_running gauge
kopfgo_daemons_running 3
# HELP kopfgo_api_requests_total Kubernetes API requests, by verb and HTTP status code (<error> when none came).
# TYPE kopfgo_api_requests_total counter
kopfgo_api_requests_total{code="200",verb="PATCH"} 1
`
	names := []string{"kopfgo_handler_invocations_total", "kopfgo_handler_retries_total", "kopfgo_objects_in_flight",
		"kopfgo_events_posted_total", "kopfgo_daemons_running", "kopfgo_api_requests_total"}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(m.duration); n != 1 {
		t.Errorf("%d duration series, want 1", n)
	}
	if n := testutil.CollectAndCount(m.apiLatency); n != 1 {
		t.Errorf("%d API latency series, want 1", n)
	}
	if v := testutil.ToFloat64(m.watchRestarts); v != 1 {
		t.Errorf("watch restarts %v", v)
	}
}

func TestShardsHeldIsRegisteredOnlyWhenSharded(t *testing.T) {
	m := New()
	if n, err := testutil.GatherAndCount(m.reg, "kopfgo_shards_held"); err != nil || n != 0 {
		t.Fatalf("kopfgo_shards_held: %d series (%v), want none before sharding", n, err)
	}
	m.ShardsHeld(3)
	m.ShardsHeld(2)
	want := `
# HELP kopfgo_shards_held How many shards' Leases this replica holds (sharding), whose objects it serves.
# TYPE kopfgo_shards_held gauge
kopfgo_shards_held 2
`
	if err := testutil.GatherAndCompare(m.reg, strings.NewReader(want), "kopfgo_shards_held"); err != nil {
		t.Error(err)
	}
}

func TestAPIFlowMetrics(t *testing.T) {
	m := New()
	m.APIFlow(func() ([]APIFlowClass, bool) {
		return []APIFlowClass{{Class: "write", InFlight: 3, Limit: 16, Waiting: 5}, {Class: "read", InFlight: 1, Limit: 20}}, true
	})
	m.APIWaited("write", 2*time.Second)
	m.APIRejected("write", 429)
	m.APIRejected("write", 429)
	m.APIRejected("read", 503)
	want := `
# HELP kopfgo_api_requests_in_flight The operator's API requests in flight, by class (write, read; watches are not counted).
# TYPE kopfgo_api_requests_in_flight gauge
kopfgo_api_requests_in_flight{class="read"} 1
kopfgo_api_requests_in_flight{class="write"} 3
# HELP kopfgo_api_requests_in_flight_limit The flow control's current limit of API requests in flight, by class (1 while the API server is unavailable).
# TYPE kopfgo_api_requests_in_flight_limit gauge
kopfgo_api_requests_in_flight_limit{class="read"} 20
kopfgo_api_requests_in_flight_limit{class="write"} 16
# HELP kopfgo_api_requests_waiting API requests waiting at the flow control's gate now, by class.
# TYPE kopfgo_api_requests_waiting gauge
kopfgo_api_requests_waiting{class="read"} 0
kopfgo_api_requests_waiting{class="write"} 5
# HELP kopfgo_api_server_unavailable 1 while the flow control holds the API server unreachable or overloaded (one probe at a time), 0 otherwise.
# TYPE kopfgo_api_server_unavailable gauge
kopfgo_api_server_unavailable 1
# HELP kopfgo_api_requests_waited_total API requests that waited at the flow control's gate (for a slot, a Retry-After, or the API server's return), by class.
# TYPE kopfgo_api_requests_waited_total counter
kopfgo_api_requests_waited_total{class="write"} 1
# HELP kopfgo_api_requests_rejected_total API requests the API server answered with 429 or 5xx, by class and code.
# TYPE kopfgo_api_requests_rejected_total counter
kopfgo_api_requests_rejected_total{class="read",code="503"} 1
kopfgo_api_requests_rejected_total{class="write",code="429"} 2
`
	names := []string{"kopfgo_api_requests_in_flight", "kopfgo_api_requests_in_flight_limit", "kopfgo_api_requests_waiting",
		"kopfgo_api_server_unavailable", "kopfgo_api_requests_waited_total", "kopfgo_api_requests_rejected_total"}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(m.flowWait); n != 1 {
		t.Errorf("%d wait series, want 1", n)
	}
}
