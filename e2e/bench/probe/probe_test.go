package probe

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/patch"
)

// The floor and the peer must write byte for byte what kopfgo writes, or the
// restart scenario's objects would not be handled for all of them alike.
func TestDiffBaseIsKopfgos(t *testing.T) {
	for _, spec := range []map[string]any{
		{"duration": "1m", "field": "value", "items": []any{"item1", "item2"}},
		{"z": "last", "a": map[string]any{"nested": true}, "m": "<&>"},
	} {
		body := map[string]any{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
			"metadata": map[string]any{"name": "x"}, "spec": spec}
		st := diffbase.Default()
		var p patch.Patch
		st.Store(body, &p, st.Build(body, nil))
		want := p.Annotations()[DiffBaseAnnotation]
		got, err := DiffBase(spec)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("DiffBase(%v) = %q, kopfgo writes %q", spec, got, want)
		}
	}
}

// instrumented is a server that answers "{}" to everything, after seen
// (if set) has its request's body, and a probe and a client that counts
// there.
func instrumented(t *testing.T, seen func(body string)) (*httptest.Server, *Probe, *http.Client) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen != nil {
			b, _ := io.ReadAll(r.Body)
			seen(string(b))
		}
		_, _ = io.WriteString(w, "{}")
	}))
	t.Cleanup(srv.Close)
	p := &Probe{}
	cfg := &rest.Config{Host: srv.URL}
	p.Instrument(cfg)
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv, p, &http.Client{Transport: rt}
}

func TestProbeCountsWritesAndWatch(t *testing.T) {
	srv, p, client := instrumented(t, nil)
	const kex = "/apis/kopf.dev/v1/namespaces/ns/kopfexamples"
	const crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	for _, r := range []struct{ method, query string }{
		{"GET", ""}, {"GET", "?watch=false"}, {"PATCH", ""}, {"POST", ""}, {"PUT", ""}, {"DELETE", ""},
		{"GET", "?watch=true&crds"}, // another resource's watch does not count
		{"GET", "?watch=true"},
	} {
		path := kex
		if strings.HasSuffix(r.query, "&crds") {
			path = crds
		}
		req, _ := http.NewRequest(r.method, srv.URL+path+r.query, strings.NewReader(""))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if r.query == "?watch=true" {
			continue
		}
		if s := p.Stats(); s.WatchStarted != 0 {
			t.Fatalf("after %s %s: the watch counts as started", r.method, r.query)
		}
	}
	s := p.Stats()
	if s.Writes != 4 {
		t.Errorf("writes = %d, want 4 (PATCH, POST, PUT, DELETE)", s.Writes)
	}
	if s.WatchStarted == 0 {
		t.Error("the watch request was not noted")
	}
	p.Call()
	if got := p.Stats().Calls; got != 1 {
		t.Errorf("calls = %d, want 1", got)
	}
}

// The coordinator's label patches count apart, whether the request's body
// can be read again (GetBody) or not, and the server still gets the body.
func TestProbeCountsShardLabels(t *testing.T) {
	var got []string
	srv, p, client := instrumented(t, func(body string) { got = append(got, body) })
	const obj = "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/x"
	const label = `{"metadata":{"labels":{"shard.kopfgo.dev/bench":"3"},"uid":"u"}}`
	const status = `{"status":{"create_fn":{"message":"hello"}}}`
	var bodies []string
	for _, r := range []struct {
		method, path, body string
		reread             bool
	}{
		{"PATCH", obj, label, true},
		{"PATCH", obj, label, false},
		{"PATCH", obj, status, true},
		{"POST", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples", label, true},         // a creation with its label
		{"PATCH", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", label, true}, // not the resource
	} {
		var body io.Reader = strings.NewReader(r.body)
		if !r.reread {
			body = io.MultiReader(body) // no GetBody for this one
		}
		req, _ := http.NewRequest(r.method, srv.URL+r.path, body)
		if (req.GetBody != nil) != r.reread {
			t.Fatalf("the request has GetBody: %v, want %v", req.GetBody != nil, r.reread)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		bodies = append(bodies, r.body)
	}
	if s := p.Stats(); s.ShardLabels != 2 || !s.CountsShardLabels || s.Writes != 5 {
		t.Errorf("stats = %+v, want 2 shard labels (the two label patches), counted, of 5 writes", s)
	}
	if strings.Join(got, "\n") != strings.Join(bodies, "\n") {
		t.Errorf("the server got the bodies\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(bodies, "\n"))
	}
}
