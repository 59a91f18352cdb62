//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/cluster"
	"github.com/kopfgo/kopfgo/e2e/faultproxy"
)

// The rest of the bad-input table: faults that hit the whole operator, not
// one object (its watches and lists, its event posts) and the cluster
// changing under a handler (its CRD or namespace deleted meanwhile). Each
// case runs a fresh operator; each asserts a log line saying what happened,
// that the object is handled once, and that the operator keeps serving.
func TestBadInputOperatorFaults(t *testing.T) {
	shared := cluster.Shared(t)
	if err := shared.Apply(context.Background(), []byte(badCRDs)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		rules []*faultproxy.Rule
		logs  []string
	}{
		// A watch told its resourceVersion is too old relists: routine in
		// a real cluster, so it is not logged above debug; nothing is lost.
		{"watch-410-expired", []*faultproxy.Rule{{Method: "GET", Watch: 1, Action: faultproxy.WatchError, Status: 410, Times: 1}}, nil},
		{"watch-500", []*faultproxy.Rule{{Method: "GET", Watch: 1, Status: 500, Times: 2}}, []string{"Cannot watch badinputs.v1.e2e.kopfgo.dev", "retrying: faultproxy: injected 500"}},
		{"watch-403", []*faultproxy.Rule{{Method: "GET", Watch: 1, Status: 403, Times: 2}}, []string{"may not list or watch badinputs.v1.e2e.kopfgo.dev", "injected 403"}},
		// Throttled by the API server: client-go backs off by itself.
		{"watch-429", []*faultproxy.Rule{{Method: "GET", Watch: 1, Status: 429, Times: 2}}, nil},
		// A connection reset or closed before any answer: Go's HTTP client
		// retries the GET by itself.
		{"watch-reset", []*faultproxy.Rule{{Method: "GET", Watch: 1, Action: faultproxy.Reset, Times: 2}}, nil},
		{"watch-dropped", []*faultproxy.Rule{{Method: "GET", Watch: 1, Action: faultproxy.Drop, Times: 2}}, nil},
		{"list-503", []*faultproxy.Rule{{Method: "GET", Watch: -1, Status: 503, Times: 2}}, []string{"failed to list", "injected 503"}},
		{"list-404", []*faultproxy.Rule{{Method: "GET", Watch: -1, Status: 404, Times: 1}}, []string{"failed to list", "injected 404"}},
		// Events are best effort: a failed post is logged, handling goes on.
		{"events-403", []*faultproxy.Rule{{Method: "POST", PathContains: "/events", Status: 403, Times: 5}}, []string{"Failed to post an event. Ignoring and continuing.", "injected 403 for POST"}},
		{"events-500", []*faultproxy.Rule{{Method: "POST", PathContains: "/events", Status: 500, Times: 5}}, []string{"Failed to post an event. Ignoring and continuing.", "injected 500 for POST"}},
		{"events-reset", []*faultproxy.Rule{{Method: "POST", PathContains: "/events", Action: faultproxy.Reset, Times: 5}}, []string{"Failed to post an event. Ignoring and continuing."}},
	}
	observe := os.Getenv("KOPFGO_BADINPUT_OBSERVE") == "1"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns := namespace(t)
			proxy, err := faultproxy.Start(shared.RESTConfig())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { proxy.Close() })
			for _, r := range c.rules {
				if r.PathContains == "" {
					r.PathContains = "/badinputs"
				}
				proxy.Add(r)
			}
			calls := &tally{}
			log := embeddedWith(t, kopfgo.Options{Namespaces: []string{ns}, RESTConfig: proxy.Config(shared.RESTConfig())}, func(op *kopfgo.Operator) {
				op.On.Create("badinputs.e2e.kopfgo.dev", func(ctx context.Context, ch *kopfgo.Change) (any, error) {
					calls.add("create", ch.Name)
					if err := kopfgo.Info(ctx, ch, "Testing", "an event of the handler"); err != nil {
						ch.Logger.Error(fmt.Sprintf("The event was not posted: %v", err))
					}
					return nil, nil
				}, kopfgo.ID("create_fn"))
			})
			(&badCase{name: "obj"}).create(t, ns)
			eventually(t, waitLong, "the object handled", func() (bool, error) {
				u, err := dyn(t).Resource(badGVR).Namespace(ns).Get(context.Background(), "obj", metav1.GetOptions{})
				return err == nil && handled(u), err
			})
			for _, r := range c.rules {
				eventually(t, waitLong, "the fault injected", func() (bool, error) { return r.Taken() >= 1, nil })
			}
			if observe {
				for _, l := range strings.Split(log.String(), "\n") {
					if strings.Contains(l, "injected") || strings.Contains(l, "410") || strings.Contains(l, "vent") || strings.Contains(l, "eset") || strings.Contains(l, "EOF") {
						t.Logf("  %.300s", l)
					}
				}
			}
			for _, l := range c.logs {
				log.WaitFor(t, l, 1)
			}
			if n := calls.get("create", "obj"); n != 1 {
				t.Errorf("create handler ran %d times, want 1", n)
			}
		})
	}
}

// The cluster changing under a running handler: its namespace deleted
// (the local cluster has no namespace controller, so the namespace stays
// Terminating, as a real one does while it has objects with finalizers),
// and its CRD deleted (the API server deletes the objects; the operator
// must finish the deletion, then report the resource gone and go on).
func TestBadInputClusterChangesUnderAHandler(t *testing.T) {
	shared := cluster.Shared(t)
	group := fmt.Sprintf("vanish%d.e2e.kopfgo.dev", time.Now().UnixNano()%1e9)
	crd := crdYAML(group, "Vanishing", "vanishings")
	if err := shared.Apply(context.Background(), []byte(badCRDs+"---"+crd)); err != nil {
		t.Fatal(err)
	}
	vanGVR := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "vanishings"}
	nsDoomed, nsCRD := namespace(t), namespace(t)
	calls := &tally{}
	gates := &badCtx{}
	blocking := func(kind string) func(ctx context.Context, ch *kopfgo.Change) (any, error) {
		return func(ctx context.Context, ch *kopfgo.Change) (any, error) {
			calls.add(kind, ch.Namespace+"/"+ch.Name)
			if kind == "create" {
				select {
				case <-gates.gate(ch.Namespace + "/" + ch.Name):
				case <-ctx.Done():
				}
			}
			return map[string]any{"done": true}, nil
		}
	}
	log := embeddedWith(t, kopfgo.Options{Namespaces: []string{nsDoomed, nsCRD}}, func(op *kopfgo.Operator) {
		for _, res := range []string{"badinputs.e2e.kopfgo.dev", "vanishings." + group} {
			op.On.Create(res, blocking("create"), kopfgo.ID("create_fn"))
			op.On.Delete(res, blocking("delete"), kopfgo.ID("delete_fn"))
		}
	})
	ctx := context.Background()

	// The namespace is deleted while the create handler runs.
	(&badCase{name: "in-doomed-ns"}).create(t, nsDoomed)
	eventually(t, waitLong, "the handler running", func() (bool, error) { return calls.get("create", nsDoomed+"/in-doomed-ns") == 1, nil })
	if err := kube(t).CoreV1().Namespaces().Delete(ctx, nsDoomed, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	close(gates.gate(nsDoomed + "/in-doomed-ns"))
	eventually(t, waitLong, "the object in the deleted namespace handled", func() (bool, error) {
		u, err := dyn(t).Resource(badGVR).Namespace(nsDoomed).Get(ctx, "in-doomed-ns", metav1.GetOptions{})
		return err == nil && handled(u), err
	})

	// The CRD is deleted while the create handler runs.
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Vanishing",
		"metadata": map[string]any{"name": "doomed"}, "spec": map[string]any{"field": "value"}}}
	if _, err := dyn(t).Resource(vanGVR).Namespace(nsCRD).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, "the handler running", func() (bool, error) { return calls.get("create", nsCRD+"/doomed") == 1, nil })
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if err := dyn(t).Resource(crdGVR).Delete(ctx, "vanishings."+group, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	close(gates.gate(nsCRD + "/doomed"))
	eventually(t, waitLong, "the CRD gone", func() (bool, error) {
		_, err := dyn(t).Resource(crdGVR).Get(ctx, "vanishings."+group, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	// Still serving the other resource, in the namespace that remains.
	(&badCase{name: "after-the-crd"}).create(t, nsCRD)
	close(gates.gate(nsCRD + "/after-the-crd"))
	eventually(t, waitLong, "a later object handled", func() (bool, error) {
		u, err := dyn(t).Resource(badGVR).Namespace(nsCRD).Get(ctx, "after-the-crd", metav1.GetOptions{})
		return err == nil && handled(u), err
	})
	if os.Getenv("KOPFGO_BADINPUT_OBSERVE") == "1" {
		t.Logf("log:\n%s", log)
	}
	log.WaitFor(t, "Stopped serving vanishings.v1."+group+"@"+nsCRD+": the resource is gone.", 1)
	if n := calls.get("delete", nsCRD+"/doomed"); n != 1 {
		t.Errorf("the delete handler of the object whose CRD went ran %d times, want 1", n)
	}
	if n := log.Count("panic"); n > 0 {
		t.Errorf("%d log lines mention a panic", n)
	}
}
