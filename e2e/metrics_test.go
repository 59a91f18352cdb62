//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopfgo/kopfgo"
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

// buildInfo is kopfgo_build_info's series: the stamp is the go command's
// record for an operator that `kopfgo run` builds (a pseudo-version, or
// "(devel)"; the commit, when the checkout has one), the Go release is this
// test's.
var buildInfo = regexp.MustCompile(`(?m)^kopfgo_build_info\{commit="[0-9a-f]*",goversion="` + regexp.QuoteMeta(runtime.Version()) + `",version="[^"]+"\} 1$`)

// handlerSeries is a handler metric's series in the exposition text, its
// labels in Prometheus' order; outcome "": a metric without it.
func handlerSeries(metric, resource, ns, cause, handler, outcome string) string {
	labels := fmt.Sprintf(`cause=%q,handler=%q,namespace=%q,`, cause, handler, ns)
	if outcome != "" {
		labels += fmt.Sprintf(`outcome=%q,`, outcome)
	}
	return fmt.Sprintf(`%s{%sresource=%q}`, metric, labels, resource)
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

	// The operator runs namespaced (-n): its handler metrics have the
	// namespace.
	const kex = "kopfexamples.v1.kopf.dev"
	calls := func(cause, handler, outcome string) string {
		return handlerSeries("kopfgo_handler_invocations_total", kex, ns, cause, handler, outcome)
	}
	want := map[string]float64{
		calls("create", "ok", "success"):                                                       1,
		calls("create", "flaky", "temporary"):                                                  2,
		calls("create", "flaky", "success"):                                                    1,
		calls("create", "doomed", "permanent"):                                                 1,
		calls("create", "broken", "exception"):                                                 1,
		handlerSeries("kopfgo_handler_retries_total", kex, ns, "create", "flaky", ""):          2,
		handlerSeries("kopfgo_handler_duration_seconds_count", kex, ns, "create", "flaky", ""): 3,
		`kopfgo_events_posted_total{result="posted"}`:                                          1,
		`kopfgo_watch_events_total{resource="kopfexamples.v1.kopf.dev",type="ADDED"}`:          1,
		calls("daemon", "once", "success"):                                                     1,
		`kopfgo_objects_in_flight`:                                                             0,
	}
	// Counts that depend on the timing: at least these.
	atLeast := map[string]float64{
		`kopfgo_watch_events_total{resource="kopfexamples.v1.kopf.dev",type="MODIFIED"}`: 1,
		`kopfgo_api_requests_total{code="200",verb="PATCH"}`:                             4, // 3 passes + a touch
		`kopfgo_events_posted_total{result="posted"}`:                                    1, // posted in the background
		`go_goroutines`:                    1,
		calls("event", "watch", "success"): 2, // ADDED, then MODIFIED by the handling
		calls("timer", "tick", "success"):  1,
		`kopfgo_queue_wait_seconds_count`:  3, // 3 passes at least
		`kopfgo_daemons_running`:           1, // the timer
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
	if !buildInfo.MatchString(text) {
		t.Errorf("no kopfgo_build_info with a version and this Go release in /metrics")
	}
	for _, name := range []string{"kopfgo_api_request_duration_seconds_bucket", "process_cpu_seconds_total"} {
		if !strings.Contains(text, name) {
			t.Errorf("no %s in /metrics", name)
		}
	}
	if strings.Contains(text, `result="failed"`) || strings.Contains(text, `kopfgo_handler_retries_total{cause="create",handler="ok",`) {
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

// TestMetricsTellResourcesApartAndTheListing runs an embedded operator with
// one handler id on two resources, started after an object exists: each
// resource's handler is a series of its own, the existing object's event
// is LISTED, and kopfgo_build_info is there.
func TestMetricsTellResourcesApartAndTheListing(t *testing.T) {
	ns := namespace(t)
	createKex(t, ns, objYAML(t)) // before the operator: listed
	port := freeTCPPort(t)
	base := "http://127.0.0.1:" + port
	created := func(ctx context.Context, c *kopfgo.Change) (any, error) { return nil, nil }
	startOperatorWith(t, kopfgo.Options{Namespaces: []string{ns}, MetricsAddr: "127.0.0.1:" + port}, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", created, kopfgo.ID("create_fn"))
		op.On.Create("configmaps", created, kopfgo.ID("create_fn"))
	})
	eventually(t, waitShort, "/readyz to say ready", func() (bool, error) {
		code, body := scrape(t, base+"/readyz")
		return code == 200, fmt.Errorf("%d %s", code, body)
	})
	if _, err := kube(t).CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cm-1"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	want := map[string]float64{
		handlerSeries("kopfgo_handler_invocations_total", "kopfexamples.v1.kopf.dev", ns, "create", "create_fn", "success"): 1,
		handlerSeries("kopfgo_handler_invocations_total", "configmaps.v1", ns, "create", "create_fn", "success"):            1,
		`kopfgo_watch_events_total{resource="kopfexamples.v1.kopf.dev",type="LISTED"}`:                                      1,
		`kopfgo_watch_events_total{resource="configmaps.v1",type="ADDED"}`:                                                  1,
	}
	var text string
	eventually(t, waitShort, "the metrics to show both resources' handlers", func() (bool, error) {
		_, text = scrape(t, base+"/metrics")
		for series, v := range want {
			if got, ok := metricValue(text, series); !ok || got != v {
				return false, fmt.Errorf("%s is %v (found %v), want %v", series, got, ok, v)
			}
		}
		return true, nil
	})
	if strings.Contains(text, `type=""`) {
		t.Errorf("a watch event type is empty in /metrics")
	}
	if !strings.Contains(text, `kopfgo_build_info{`) || !strings.Contains(text, `goversion="`+runtime.Version()+`"`) {
		t.Errorf("no kopfgo_build_info of this Go release in /metrics")
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", text)
	}
}
