package health

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestReadiness(t *testing.T) {
	r := &Readiness{}
	check := func(code int, body string) {
		t.Helper()
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		if w.Code != code || !strings.Contains(w.Body.String(), body) {
			t.Fatalf("%d %q, want %d with %q", w.Code, w.Body.String(), code, body)
		}
	}
	check(503, "startup handlers")
	r.StartupDone()
	check(503, "not watched yet")
	r.WatchStarted("a@ns")
	r.WatchStarted("b@")
	r.Served()
	check(503, "a@ns, b@")
	r.WatchSynced("a@ns")
	check(503, "for b@")
	r.WatchStopped("b@")
	check(200, "ok")
	r.WatchStarted("c@") // a CRD that appeared later
	check(503, "for c@")
}

func TestReadinessSaysTheShardsHeld(t *testing.T) {
	r := &Readiness{}
	r.StartupDone()
	r.Served()
	r.Shards([]int{0, 3})
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if got := w.Body.String(); w.Code != 200 || got != "ok (shards held: 2 [0 3])\n" {
		t.Errorf("%d %q, want 200 with the shards held", w.Code, got)
	}
	r.Shards(nil)
	r.Paused([]string{"sharding"})
	w = httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if got := w.Body.String(); got != "ok (standing by: sharding; shards held: 0 [])\n" {
		t.Errorf("%q, want standing by with no shards", got)
	}
}

func TestReadinessWaitsForUnresolvedResources(t *testing.T) {
	r := &Readiness{}
	r.StartupDone()
	r.Served()
	answer := func() (int, string) {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return w.Code, w.Body.String()
	}
	missing := []string{"kopfexampls for handlers create_fn (did you mean kopfexamples?)"}
	r.Unresolved(missing, true)
	if code, body := answer(); code != 503 || body != "not ready: unresolved resources: kopfexampls for handlers create_fn (did you mean kopfexamples?)\n" {
		t.Errorf("blocking: %d %q, want 503 naming the resource and the suggestion", code, body)
	}
	r.Unresolved(missing, false)
	if code, body := answer(); code != 200 || body != "ok (unresolved resources: kopfexampls for handlers create_fn (did you mean kopfexamples?))\n" {
		t.Errorf("relaxed: %d %q, want 200 naming the resource", code, body)
	}
	r.Unresolved(missing, true)
	r.Unresolved(nil, true) // its CRD has appeared
	if code, body := answer(); code != 200 || body != "ok\n" {
		t.Errorf("resolved: %d %q, want 200 ok", code, body)
	}
}
