//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// scrape GETs url and returns the status code and body.
func scrape(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// metricValue finds one sample of the exposition text: name{labels} value,
// with the labels as Prometheus sorts them.
func metricValue(text, series string) (float64, bool) {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// TestMetricsOfAScriptedWorkload runs the scripted operator (every outcome
// of a handler, a known number of times) on one object, with only
// --liveness: the metrics are on the liveness server then.
func TestMetricsOfAScriptedWorkload(t *testing.T) {
	ns := namespace(t)
	port := freeTCPPort(t)
	p := runOperator(t, "./e2e/operators/scripted", ns, "--liveness=http://127.0.0.1:"+port+"/healthz")
	base := "http://127.0.0.1:" + port
	eventually(t, waitShort, "/readyz to say ready", func() (bool, error) {
		code, body := scrape(t, base+"/readyz")
		return code == 200, fmt.Errorf("%d %s", code, body)
	})
	createKex(t, ns, objYAML(t))
	waitKex(t, ns, "kopf-example-1", "the cycle to finish", handled)
	waitLog(t, p, "Handling cycle is finished, waiting for new changes.", 1)

	want := map[string]float64{
		`kopfgo_handler_invocations_total{cause="create",handler="ok",outcome="success"}`:       1,
		`kopfgo_handler_invocations_total{cause="create",handler="flaky",outcome="temporary"}`:  2,
		`kopfgo_handler_invocations_total{cause="create",handler="flaky",outcome="success"}`:    1,
		`kopfgo_handler_invocations_total{cause="create",handler="doomed",outcome="permanent"}`: 1,
		`kopfgo_handler_invocations_total{cause="create",handler="broken",outcome="exception"}`: 1,
		`kopfgo_handler_retries_total{cause="create",handler="flaky"}`:                          2,
		`kopfgo_handler_duration_seconds_count{cause="create",handler="flaky"}`:                 3,
		`kopfgo_events_posted_total{result="posted"}`:                                           1,
		`kopfgo_watch_events_total{resource="kopfexamples.v1.kopf.dev",type="ADDED"}`:           1,
		`kopfgo_handler_invocations_total{cause="daemon",handler="once",outcome="success"}`:     1,
		`kopfgo_objects_in_flight`: 0,
	}
	// Counts that depend on the timing: at least these.
	atLeast := map[string]float64{
		`kopfgo_watch_events_total{resource="kopfexamples.v1.kopf.dev",type="MODIFIED"}`: 1,
		`kopfgo_api_requests_total{code="200",verb="PATCH"}`:                             4, // 3 passes + a touch
		`kopfgo_events_posted_total{result="posted"}`:                                    1, // posted in the background
		`go_goroutines`: 1,
		`kopfgo_handler_invocations_total{cause="event",handler="watch",outcome="success"}`: 2, // ADDED, then MODIFIED by the handling
		`kopfgo_handler_invocations_total{cause="timer",handler="tick",outcome="success"}`:  1,
		`kopfgo_queue_wait_seconds_count`:                                                   3, // 3 passes at least
		`kopfgo_daemons_running`:                                                            1, // the timer
	}
	var text string
	eventually(t, waitShort, "the metrics to show the workload", func() (bool, error) {
		var code int
		code, text = scrape(t, base+"/metrics")
		for series, v := range want {
			if got, ok := metricValue(text, series); !ok || got != v {
				return false, fmt.Errorf("%d: %s is %v (found %v), want %v", code, series, got, ok, v)
			}
		}
		for series, v := range atLeast {
			if got, ok := metricValue(text, series); !ok || got < v {
				return false, fmt.Errorf("%s is %v (found %v), want at least %v", series, got, ok, v)
			}
		}
		return true, nil
	})
	for _, name := range []string{"kopfgo_api_request_duration_seconds_bucket", "process_cpu_seconds_total"} {
		if !strings.Contains(text, name) {
			t.Errorf("no %s in /metrics", name)
		}
	}
	if strings.Contains(text, `result="failed"`) || strings.Contains(text, `kopfgo_handler_retries_total{cause="create",handler="ok"}`) {
		t.Errorf("unexpected failures in:\n%s", text)
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", text)
	}
}

// TestReadyzWaitsForTheInitialListing runs an operator whose service
// account may not list its resource yet: /readyz (on --metrics-addr) says
// 503 and why; once the role is granted, the listing completes and it says
// 200.
func TestReadyzWaitsForTheInitialListing(t *testing.T) {
	ns := namespace(t)
	const pkg = "./e2e/operators/retrying"
	objs := docs(t, kopfgoRBAC(t, pkg, "-n", ns, "--namespaced", "--service-account-namespace", ns))
	kubeconfig, k := serviceAccountKubeconfig(t, ns, "op-ready")
	port := freeTCPPort(t)
	base := "http://127.0.0.1:" + port
	p := runOperator(t, pkg, ns, "--kubeconfig", kubeconfig, "--metrics-addr=127.0.0.1:"+port)
	waitLog(t, p, `cannot list resource "kopfexamples"`, 1)
	code, body := scrape(t, base+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "initial listing is not complete for kopfexamples.v1.kopf.dev@"+ns) {
		t.Fatalf("/readyz before the listing: %d %q, want 503 naming the listing", code, body)
	}
	applyRBAC(t, rename(t, objs, "kopfgo-e2e-ready-"+ns, "op-ready"))
	waitAllowed(t, k, ns, "kopf.dev", "list", "kopfexamples")
	eventually(t, waitLong, "/readyz to say ready", func() (bool, error) {
		code, body := scrape(t, base+"/readyz")
		return code == 200 && strings.TrimSpace(body) == "ok", fmt.Errorf("%d %s", code, body)
	})
	if code, text := scrape(t, base+"/metrics"); code != 200 || !strings.Contains(text, "kopfgo_watch_restarts_total") {
		t.Errorf("/metrics on --metrics-addr: %d, no kopfgo_watch_restarts_total in:\n%s", code, text)
	}
}
