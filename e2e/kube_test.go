//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kopfgo/kopfgo/e2e/cluster"
	kubeclient "github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/patch"
)

// The operator reads only the resourceVersion of what its patches return, so
// it asks the API server for the metadata alone: both sides then encode,
// send and scan a fraction of the object. The version it reads back must
// still be the object's.
func TestPatchesReadBackOnlyTheMetadata(t *testing.T) {
	ns := namespace(t)
	kex := createKex(t, ns, objYAML(t))

	var mu sync.Mutex
	var answers []string
	cfg := rest.CopyConfig(cluster.Shared(t).RESTConfig())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err != nil || req.Method != http.MethodPatch {
				return resp, err
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(body))
			mu.Lock()
			answers = append(answers, string(body))
			mu.Unlock()
			return resp, err
		})
	})
	c, err := kubeclient.NewClient(cfg, kubeclient.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := resources.Resource{Group: "kopf.dev", Version: "v1", Plural: "kopfexamples", Kind: "KopfExample",
		Namespaced: true, Subresources: []string{"status"}}
	pt := &patch.Patch{}
	pt.SetAnnotation("e2e.kopfgo.dev/touched", "yes")
	pt.Section("status")["e2e"] = map[string]any{"n": int64(1)}
	rv, err := c.Apply(context.Background(), res, ns, kex.GetName(), pt)
	if err != nil {
		t.Fatal(err)
	}
	got := getKex(t, ns, kex.GetName())
	if rv == "" || rv != got.GetResourceVersion() {
		t.Errorf("Apply returned resourceVersion %q; the object has %q", rv, got.GetResourceVersion())
	}
	if got.GetAnnotations()["e2e.kopfgo.dev/touched"] != "yes" {
		t.Errorf("the annotation was not patched: %v", got.GetAnnotations())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(answers) != 2 {
		t.Fatalf("%d patch requests, want 2 (status, then the rest)", len(answers))
	}
	for _, a := range answers {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(a), &m); err != nil {
			t.Fatalf("unreadable patch response %q: %v", a, err)
		}
		if m["kind"] != "PartialObjectMetadata" || m["spec"] != nil || m["status"] != nil {
			t.Errorf("a patch response carried more than the metadata: %s", strings.TrimSpace(a))
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
