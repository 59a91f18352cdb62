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
