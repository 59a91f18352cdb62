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

func TestProbeCountsWritesAndWatch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "{}")
	}))
	defer srv.Close()
	p := &Probe{}
	cfg := &rest.Config{Host: srv.URL}
	p.Instrument(cfg)
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: rt}
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
