package kubefake

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/patch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var kex = resources.Resource{Group: "kopf.dev", Version: "v1", Plural: "kopfexamples", Kind: "KopfExample", Namespaced: true}

func kexObject(name string, labels map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{"name": name, "namespace": "ns", "labels": labels,
			"managedFields": []any{map[string]any{"manager": "kubectl"}}},
		"spec": map[string]any{"n": int64(1)},
	}}
}

func newFake(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{kex.GVR(): "KopfExampleList"}, objs...)
}

// The client's lists, watches and patches reach the fake over HTTP, with
// the list options (the label selector) passed on, and come back as the
// raw client reads an API server's: compact, without managedFields.
func TestListWatchAndPatchGoThroughTheFake(t *testing.T) {
	dyn := newFake(kexObject("a", map[string]any{"shard": "0"}), kexObject("b", map[string]any{"shard": "1"}))
	c, err := New(dyn, Options{}).Client(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lw := c.ListWatch(kex, "ns", kube.WatchOptions{Compact: true, LabelSelector: "shard=0"})
	listed, err := lw.ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := listed.(*kube.CompactList).Items
	if len(items) != 1 || items[0].Name != "a" {
		t.Fatalf("listed %v, want a alone", items)
	}
	u, err := items[0].Decode()
	if err != nil {
		t.Fatal(err)
	}
	if _, has := u.Object["metadata"].(map[string]any)["managedFields"]; has || u.Object["spec"].(map[string]any)["n"] != int64(1) {
		t.Errorf("listed %v: want it whole, without managedFields", u.Object)
	}

	all, err := c.List(ctx, kex, "ns")
	if err != nil || len(all) != 2 {
		t.Fatalf("List: %d objects (%v), want 2", len(all), err)
	}
	if _, has := all[0].Object["metadata"].(map[string]any)["managedFields"]; has {
		t.Errorf("List gave %v: want it without managedFields", all[0].Object)
	}

	w, err := lw.WatchWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	p := &patch.Patch{}
	p.SetAnnotation("x", "y")
	if _, err := c.Apply(ctx, kex, "ns", "a", p); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		obj, ok := ev.Object.(*kube.Compact)
		if ev.Type != watch.Modified || !ok || obj.Name != "a" {
			t.Fatalf("event %v %T, want a's modification, compact", ev.Type, ev.Object)
		}
		u, err := obj.Decode()
		if err != nil || u.GetAnnotations()["x"] != "y" {
			t.Errorf("watched %v (%v), want the patched annotation", u, err)
		}
	case <-time.After(10 * time.Second): // a failure detector
		t.Fatal("no event of the patch")
	}
	got, err := dyn.Resource(kex.GVR()).Namespace("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.GetAnnotations()["x"] != "y" {
		t.Errorf("the fake holds %v (%v), want the patch applied", got, err)
	}
}

// The fake's errors come back as an API server's: a missing object is
// kube.ErrGone to Apply.
func TestErrorsAreTheAPIServers(t *testing.T) {
	c, err := New(newFake(), Options{}).Client(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &patch.Patch{}
	p.SetAnnotation("x", "y")
	if _, err := c.Apply(context.Background(), kex, "ns", "missing", p); !errors.Is(err, kube.ErrGone) {
		t.Errorf("Apply to a missing object: %v, want kube.ErrGone", err)
	}
}

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		path string
		want target
	}{
		{"/api/v1/namespaces/ns/pods", target{gvr: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, namespace: "ns"}},
		{"/api/v1/pods", target{gvr: schema.GroupVersionResource{Version: "v1", Resource: "pods"}}},
		{"/apis/kopf.dev/v1/namespaces/ns/kopfexamples/a/status", target{gvr: kex.GVR(), namespace: "ns", name: "a", sub: "status"}},
		{"/api/v1/namespaces", target{gvr: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}}},
		{"/api/v1/namespaces/ns", target{gvr: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, name: "ns"}},
		{"/api/v1/namespaces/ns/status", target{gvr: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, name: "ns", sub: "status"}},
	} {
		got, err := parsePath(tc.path)
		if err != nil || got != tc.want {
			t.Errorf("parsePath(%q) = %+v, %v; want %+v", tc.path, got, err, tc.want)
		}
	}
	for _, bad := range []string{"/", "/apis/kopf.dev", "/healthz", "/apis/kopf.dev/v1/namespaces/ns/kopfexamples/a/status/more"} {
		if got, err := parsePath(bad); err == nil {
			t.Errorf("parsePath(%q) = %+v, want an error", bad, got)
		}
	}
}
