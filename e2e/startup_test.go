//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/cluster"
)

// An operator started while the API server is down waits for it, retrying
// its first requests with the error backoffs and logging each attempt as
// Kopf does, and serves as soon as the server is up (it used to exit at
// once with "connection refused").
func TestOperatorStartedBeforeTheAPIServerServesOnceItIsUp(t *testing.T) {
	c := cluster.NewForTest(t, cluster.Options{})
	ctx := context.Background()
	if err := c.ApplyFile(ctx, filepath.Join(repoRoot, "examples", "crd.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	var creates countingCreate
	log := embeddedWith(t, kopfgo.Options{Namespaces: []string{"default"}, RESTConfig: c.RESTConfig()}, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", creates.fn, kopfgo.ID("create"))
	})
	// Evidence that the operator is up and waiting, not gone.
	log.WaitFor(t, "Request attempt #2/9 failed; will retry: GET https://", 1)
	if err := c.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	log.WaitFor(t, "succeeded: GET https://", 1)

	d, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	kex := d.Resource(kexGVR).Namespace("default")
	if _, err := kex.Create(ctx, &unstructured.Unstructured{Object: kexNamed(t, "late")}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, "late handled", func() (bool, error) {
		u, err := kex.Get(ctx, "late", metav1.GetOptions{})
		return err == nil && handled(u), err
	})
	log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", 1)
	if got := creates.get("late"); got != 1 {
		t.Errorf("the creation handler ran %d times, want 1", got)
	}
	if n := log.Count("escalating"); n != 0 {
		t.Errorf("%d requests escalated, want none: the server came back within the backoffs", n)
	}
}
