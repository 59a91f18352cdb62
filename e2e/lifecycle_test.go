//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/e2e/runner"
)

const lifecycleOp = "./e2e/operators/lifecycle"

func lineIndex(p *runner.Process, substr string) int {
	for i, l := range p.Lines() {
		if strings.Contains(l, substr) {
			return i
		}
	}
	return -1
}

func TestStartupRetriesDelayAllWatching(t *testing.T) {
	ns := namespace(t)
	obj := createKex(t, ns, objYAML(t)) // exists before the operator starts
	t.Setenv("KOPFGO_TEST_STARTUP_FAILURES", "2")
	op := runOperator(t, lifecycleOp, ns)
	waitKex(t, ns, obj.GetName(), "handled", handled)
	assertCount(t, op, "STARTUP attempt", 3)
	assertCount(t, op, "failed temporarily: not yet", 2)
	done := lineIndex(op, "STARTUP DONE")
	if first := lineIndex(op, "CREATE retry="); done < 0 || first < done {
		t.Errorf("a handler ran (line %d) before startup finished (line %d)", first, done)
	}
	if serving := lineIndex(op, "Serving"); serving < done {
		t.Errorf("watching started (line %d) before startup finished (line %d)", serving, done)
	}
	if err := op.Stop(waitShort); err != nil {
		t.Fatal(err)
	}
	assertCount(t, op, "CLEANUP RAN", 1)
}

func TestPermanentStartupFailureExitsNonZero(t *testing.T) {
	ns := namespace(t)
	obj := createKex(t, ns, objYAML(t))
	t.Setenv("KOPFGO_TEST_STARTUP_PERMANENT", "1")
	op := runOperator(t, lifecycleOp, ns)
	select {
	case <-op.Done():
	case <-time.After(waitLong):
		t.Fatalf("the operator is still running after a permanent startup failure")
	}
	if code := op.ExitCode(); code == 0 {
		t.Errorf("exit code 0 after a permanent startup failure")
	}
	if op.Count("the test says no") == 0 || op.Count("cannot start") == 0 {
		t.Errorf("the reason is not in the log:\n%s", op.Log())
	}
	u := getKex(t, ns, obj.GetName())
	if len(u.GetAnnotations()) > 1 || len(u.GetFinalizers()) > 0 {
		t.Errorf("the operator touched the object: %v %v", u.GetAnnotations(), u.GetFinalizers())
	}
}

func TestLivenessEndpointServesProbes(t *testing.T) {
	ns := namespace(t)
	port := freeTCPPort(t)
	unhealthy := filepath.Join(t.TempDir(), "unhealthy")
	t.Setenv("KOPFGO_TEST_UNHEALTHY_FILE", unhealthy)
	runOperator(t, lifecycleOp, ns, "--liveness=http://127.0.0.1:"+port+"/healthz")
	url := "http://127.0.0.1:" + port + "/healthz"

	var body map[string]map[string]any
	eventually(t, waitLong, "a 200 from the liveness endpoint", func() (bool, error) {
		code, raw, err := httpGet(url)
		if err != nil || code != 200 {
			return false, err
		}
		return json.Unmarshal([]byte(raw), &body) == nil, nil
	})
	if body["probe"]["healthy"] != true {
		t.Errorf("probe results = %v, want probe.healthy", body)
	}
	if err := os.WriteFile(unhealthy, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Results are cached for 10 s: the 500 comes once the cache expires.
	eventually(t, 30*time.Second, "a 500 from the liveness endpoint", func() (bool, error) {
		code, raw, err := httpGet(url)
		return err == nil && code == 500 && strings.Contains(raw, "unhealthy by the test's wish"), err
	})
}

func TestSigtermDuringLongHandlerPersistsProgress(t *testing.T) {
	ns := namespace(t)
	obj := objYAML(t)
	obj["metadata"].(map[string]any)["labels"] = map[string]any{"slow": "yes"}
	op := runOperator(t, lifecycleOp, ns)
	created := createKex(t, ns, obj)
	waitLog(t, op, "CREATE retry=0", 1)
	first := regexp.MustCompile(`CREATE retry=0 started=(\S+)`).FindStringSubmatch(op.Log())

	start := time.Now()
	if err := op.Stop(waitShort); err != nil {
		t.Fatalf("SIGTERM: %v (want exit 0)", err)
	}
	t.Logf("the operator exited %s after SIGTERM", time.Since(start).Round(time.Millisecond))
	assertCount(t, op, "is cancelled. Will escalate.", 1)
	assertCount(t, op, "CLEANUP RAN", 1)
	var rec map[string]any
	raw := getKex(t, ns, created.GetName()).GetAnnotations()["kopf.zalando.org/create"]
	if err := json.Unmarshal([]byte(raw), &rec); err != nil || rec["started"] == nil {
		t.Fatalf("no progress record after SIGTERM: %q", raw)
	}

	op2 := runOperator(t, lifecycleOp, ns)
	waitLog(t, op2, "CREATE retry=0", 1)
	if first == nil || op2.Count("started="+first[1]) != 1 {
		t.Errorf("the restarted handler did not continue from the persisted start %v:\n%s", first, op2.Log())
	}
}

func freeTCPPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

func httpGet(url string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
