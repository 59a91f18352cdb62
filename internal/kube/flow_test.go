package kube

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kopfgo/kopfgo/internal/flowcontrol"
	"github.com/kopfgo/kopfgo/patch"
)

// Every client NewClient builds passes the one gate: patches as writes,
// gets, lists and discovery as reads; watches and Leases pass it ungated.
func TestEveryClientPassesTheGate(t *testing.T) {
	gate := flowcontrol.New(flowcontrol.Config{})
	var (
		mu   sync.Mutex
		seen []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := gate.Stats() // while this request is in flight
		what := r.Method
		if r.URL.Query().Get("watch") == "true" {
			what = "WATCH"
		}
		if strings.Contains(r.URL.Path, "/leases/") {
			what = "LEASE " + r.Method + " " + r.UserAgent()
		}
		mu.Lock()
		seen = append(seen, what+" "+inFlight(s))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case what == "WATCH":
		case strings.HasPrefix(what, "LEASE"):
			_, _ = io.WriteString(w, `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l","namespace":"ns","resourceVersion":"3"}}`)
		case r.URL.Path == "/api":
			_, _ = io.WriteString(w, `{"kind":"APIVersions","versions":["v1"]}`)
		case r.URL.Path == "/apis":
			_, _ = io.WriteString(w, `{"kind":"APIGroupList","groups":[]}`)
		case r.URL.Path == "/api/v1":
			_, _ = io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[]}`)
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "kopfexamples"):
			_, _ = io.WriteString(w, `{"kind":"KopfExampleList","apiVersion":"kopf.dev/v1","metadata":{"resourceVersion":"1"},"items":[]}`)
		default:
			_, _ = io.WriteString(w, `{"apiVersion":"kopf.dev/v1","kind":"KopfExample","metadata":{"name":"x","namespace":"ns","resourceVersion":"2"}}`)
		}
	}))
	defer srv.Close()
	c, err := NewClient(&rest.Config{Host: srv.URL, Transport: srv.Client().Transport}, ClientOptions{Flow: gate})
	if err != nil {
		t.Fatal(err)
	}
	if c.Flow() != gate {
		t.Fatal("the client does not hand out its gate")
	}
	ctx := context.Background()
	if _, err := c.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	p := &patch.Patch{}
	p.SetAnnotation("a", "b")
	if _, err := c.Apply(ctx, kex, "ns", "x", p); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, kex, "ns", "x"); err != nil {
		t.Fatal(err)
	}
	lw := c.ListWatch(kex, "ns", WatchOptions{})
	if _, err := lw.ListWithContext(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	lease, err := c.Leases().Leases("ns").Get(ctx, "l", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Leases().Leases("ns").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(seen)
	seen = slices.Compact(seen)
	// Leases pass ungated, with the operator's user agent.
	if want := []string{"GET reads 1", "LEASE GET kopfgo none", "LEASE PUT kopfgo none", "PATCH writes 1", "WATCH none"}; !slices.Equal(seen, want) {
		t.Errorf("requests seen with the gate's figures %v, want %v", seen, want)
	}
}

func inFlight(s flowcontrol.Stats) string {
	switch {
	case s.Writes.InFlight == 1 && s.Reads.InFlight == 0:
		return "writes 1"
	case s.Reads.InFlight == 1 && s.Writes.InFlight == 0:
		return "reads 1"
	case s.Reads.InFlight == 0 && s.Writes.InFlight == 0:
		return "none"
	}
	return "more"
}
