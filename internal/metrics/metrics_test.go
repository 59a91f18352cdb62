package metrics

import (
	"context"
	"errors"
	"math"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

func TestMetrics(t *testing.T) {
	m := New(Options{})
	const kex = "kopfexamples.v1.kopf.dev"
	call := Call{Resource: kex, Namespace: "ns1", Handler: "create_fn", Cause: "create", Outcome: Success}
	m.HandlerCalled(call, 10*time.Millisecond)
	m.HandlerCalled(Call{Resource: kex, Namespace: "ns1", Handler: "create_fn", Cause: "create", Outcome: Temporary}, time.Millisecond)
	m.HandlerCalled(Call{Resource: kex, Namespace: "ns2", Handler: "create_fn", Cause: "create", Outcome: Success, Retry: 1}, time.Millisecond)
	// The same handler id of another resource: a series of its own.
	m.HandlerCalled(Call{Resource: "pods.v1", Handler: "create_fn", Cause: "create", Outcome: Success}, time.Millisecond)
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
# HELP kopfgo_handler_invocations_total Calls of handlers, by resource, handler id, cause (create, update, delete, resume, field…; event; daemon, timer) and outcome (success, temporary, permanent, exception).
# TYPE kopfgo_handler_invocations_total counter
kopfgo_handler_invocations_total{cause="create",handler="create_fn",outcome="success",resource="kopfexamples.v1.kopf.dev"} 2
kopfgo_handler_invocations_total{cause="create",handler="create_fn",outcome="temporary",resource="kopfexamples.v1.kopf.dev"} 1
kopfgo_handler_invocations_total{cause="create",handler="create_fn",outcome="success",resource="pods.v1"} 1
# HELP kopfgo_handler_retries_total Calls of handlers that were retries of an earlier failed call, by resource, handler id and cause.
# TYPE kopfgo_handler_retries_total counter
kopfgo_handler_retries_total{cause="create",handler="create_fn",resource="kopfexamples.v1.kopf.dev"} 1
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
	if n := testutil.CollectAndCount(m.duration); n != 2 {
		t.Errorf("%d duration series, want 2 (one per resource)", n)
	}
	if n := testutil.CollectAndCount(m.apiLatency); n != 1 {
		t.Errorf("%d API latency series, want 1", n)
	}
	if v := testutil.ToFloat64(m.watchRestarts); v != 1 {
		t.Errorf("watch restarts %v", v)
	}
}

func TestShardsHeldIsRegisteredOnlyWhenSharded(t *testing.T) {
	m := New(Options{})
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

// The admission metrics appear with the first request, counted by
// webhook and code, and timed by webhook.
func TestAdmissionRequests(t *testing.T) {
	m := New(Options{})
	if n, err := testutil.GatherAndCount(m.reg, "kopfgo_admission_requests_total"); err != nil || n != 0 {
		t.Fatalf("kopfgo_admission_requests_total: %d series (%v), want none before a request", n, err)
	}
	m.AdmissionRequest("check", 200, 2*time.Millisecond)
	m.AdmissionRequest("check", 200, 3*time.Millisecond)
	m.AdmissionRequest("unknown", 404, time.Millisecond)
	want := `
# HELP kopfgo_admission_requests_total Admission reviews the webhook server answered, by webhook (the handler id in the path; "" for the root, "unknown" for no handler's) and HTTP code (200 for every verdict, rejections included).
# TYPE kopfgo_admission_requests_total counter
kopfgo_admission_requests_total{code="200",webhook="check"} 2
kopfgo_admission_requests_total{code="404",webhook="unknown"} 1
`
	if err := testutil.GatherAndCompare(m.reg, strings.NewReader(want), "kopfgo_admission_requests_total"); err != nil {
		t.Error(err)
	}
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != "kopfgo_admission_request_duration_seconds" {
			continue
		}
		for _, s := range mf.GetMetric() {
			if s.GetLabel()[0].GetValue() == "check" && (s.GetHistogram().GetSampleCount() != 2 || math.Abs(s.GetHistogram().GetSampleSum()-0.005) > 1e-9) {
				t.Errorf("check's answers: %d timed, %gs in all; want 2 and 0.005s", s.GetHistogram().GetSampleCount(), s.GetHistogram().GetSampleSum())
			}
		}
	}
}

func TestAPIFlowMetrics(t *testing.T) {
	m := New(Options{})
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

// A namespaced operator's handler metrics have the object's namespace too.
func TestHandlerMetricsOfANamespacedOperator(t *testing.T) {
	m := New(Options{Namespaced: true})
	const kex = "kopfexamples.v1.kopf.dev"
	m.HandlerCalled(Call{Resource: kex, Namespace: "ns1", Handler: "fn", Cause: "update", Outcome: Exception}, time.Millisecond)
	m.HandlerCalled(Call{Resource: kex, Namespace: "ns1", Handler: "fn", Cause: "update", Outcome: Success, Retry: 1}, time.Millisecond)
	m.HandlerCalled(Call{Resource: kex, Namespace: "ns2", Handler: "fn", Cause: "update", Outcome: Success}, time.Millisecond)
	want := `
# HELP kopfgo_handler_invocations_total Calls of handlers, by resource, namespace, handler id, cause (create, update, delete, resume, field…; event; daemon, timer) and outcome (success, temporary, permanent, exception).
# TYPE kopfgo_handler_invocations_total counter
kopfgo_handler_invocations_total{cause="update",handler="fn",namespace="ns1",outcome="exception",resource="kopfexamples.v1.kopf.dev"} 1
kopfgo_handler_invocations_total{cause="update",handler="fn",namespace="ns1",outcome="success",resource="kopfexamples.v1.kopf.dev"} 1
kopfgo_handler_invocations_total{cause="update",handler="fn",namespace="ns2",outcome="success",resource="kopfexamples.v1.kopf.dev"} 1
# HELP kopfgo_handler_retries_total Calls of handlers that were retries of an earlier failed call, by resource, namespace, handler id and cause.
# TYPE kopfgo_handler_retries_total counter
kopfgo_handler_retries_total{cause="update",handler="fn",namespace="ns1",resource="kopfexamples.v1.kopf.dev"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "kopfgo_handler_invocations_total", "kopfgo_handler_retries_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(m.duration); n != 2 {
		t.Errorf("%d duration series, want 2 (one per namespace)", n)
	}
}

func TestBuildInfo(t *testing.T) {
	m := New(Options{Version: "v1.2.3", Commit: "0123456789abcdef"})
	want := `
# HELP kopfgo_build_info Always 1: the operator's build, by version, commit (empty if unknown) and goversion (the Go release it was built with).
# TYPE kopfgo_build_info gauge
kopfgo_build_info{commit="0123456789abcdef",goversion="` + runtime.Version() + `",version="v1.2.3"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "kopfgo_build_info"); err != nil {
		t.Fatal(err)
	}
}

// exercise uses every metric once, so that every vector has a series and
// every metric registered on first use is registered.
func exercise(m *Metrics) {
	m.HandlerCalled(Call{Resource: "kopfexamples.v1.kopf.dev", Namespace: "ns1", Handler: "fn", Cause: "create", Outcome: Temporary}, time.Millisecond)
	m.HandlerCalled(Call{Resource: "kopfexamples.v1.kopf.dev", Namespace: "ns1", Handler: "fn", Cause: "create", Outcome: Success, Retry: 1}, time.Millisecond)
	m.Busy(1)
	m.QueueWait(time.Millisecond)
	m.WatchEvent("kopfexamples.v1.kopf.dev", "LISTED")
	m.WatchRestart("kopfexamples.v1.kopf.dev")
	m.EventPosted(nil)
	m.Paused(false)
	m.Leading(true)
	m.ShardsHeld(2)
	m.AdmissionRequest("check", 200, time.Millisecond)
	m.Daemons(func() int { return 1 })
	m.Waiting(func() int { return 0 })
	m.APIFlow(func() ([]APIFlowClass, bool) { return []APIFlowClass{{Class: "write", Limit: 16}}, false })
	m.APIWaited("write", time.Millisecond)
	m.APIRejected("write", 429)
	clientmetrics.RequestLatency.Observe(context.Background(), "get", url.URL{}, time.Millisecond)
	clientmetrics.RequestResult.Increment(context.Background(), "200", "GET", "host")
}

// Every metric of the operator, as promlint checks names, units, types and
// help texts; and as the metrics' own conventions want them: kopfgo's
// under kopfgo_, every help text a sentence.
func TestMetricsPassPromlint(t *testing.T) {
	for _, namespaced := range []bool{false, true} {
		m := New(Options{Namespaced: namespaced, Version: "v1.2.3", Commit: "0123456789abcdef"})
		exercise(m)
		problems, err := testutil.GatherAndLint(m.Registry())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("promlint (namespaced: %v): %s: %s", namespaced, p.Metric, p.Text)
		}
		families, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, mf := range families {
			name, help := mf.GetName(), mf.GetHelp()
			names[name] = true
			if !strings.HasPrefix(name, "kopfgo_") && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
				t.Errorf("%s: not under kopfgo_", name)
			}
			if strings.HasPrefix(name, "kopfgo_") && (!strings.HasSuffix(help, ".") || strings.ToUpper(help[:1]) != help[:1]) {
				t.Errorf("%s: help %q is not a sentence", name, help)
			}
			if len(mf.GetMetric()) == 0 {
				t.Errorf("%s: no series after the scripted use", name)
			}
		}
		documented := documentedMetrics(t)
		for name := range documented {
			if !names[name] {
				t.Errorf("%s: in docs/metrics.md's list, not registered", name)
			}
		}
		for name := range names {
			if strings.HasPrefix(name, "kopfgo_") && !documented[name] {
				t.Errorf("%s: registered, not in docs/metrics.md's list", name)
			}
		}
	}
}

// documentedMetrics are the kopfgo_ metrics of docs/metrics.md's table.
func documentedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	row := regexp.MustCompile("^\\| (`kopfgo_[a-z_]+`.*?) \\|")
	name := regexp.MustCompile("`(kopfgo_[a-z_]+)`")
	for _, line := range strings.Split(string(doc), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			for _, n := range name.FindAllStringSubmatch(m[1], -1) {
				out[n[1]] = true
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("docs/metrics.md lists no kopfgo_ metrics")
	}
	return out
}
