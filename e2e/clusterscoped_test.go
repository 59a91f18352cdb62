//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopfgo/kopfgo"
)

// A cluster-scoped resource (core v1 namespaces) is handled as namespaced
// ones are: created, then updated, with the diff-base on the object
// (compat: scope-cluster). The label keeps the other tests' namespaces out
// of the handlers.
func TestClusterScopedResourceIsHandled(t *testing.T) {
	mark := fmt.Sprintf("cs-%d", time.Now().UnixNano()%1e9)
	var created, updated calls
	embeddedWith(t, kopfgo.Options{}, func(op *kopfgo.Operator) {
		op.On.Create("v1/namespaces", created.fn, kopfgo.ID("ns_create"), kopfgo.Labels{"kopfgo-e2e": mark})
		op.On.Update("v1/namespaces", updated.fn, kopfgo.ID("ns_update"), kopfgo.Labels{"kopfgo-e2e": mark})
	})
	ctx := context.Background()
	k := kube(t)
	name := "e2e-" + mark
	if _, err := k.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: name, Labels: map[string]string{"kopfgo-e2e": mark}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, "the creation handler", func() (bool, error) { return created.count() == 1, nil })
	if c := created.all()[0]; c.Name != name || c.Namespace != "" {
		t.Errorf("handler saw name %q, namespace %q; want %q and none", c.Name, c.Namespace, name)
	}
	eventually(t, waitShort, "the diff-base on the namespace", func() (bool, error) {
		obj, err := k.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return obj.Annotations["kopf.zalando.org/last-handled-configuration"] != "", nil
	})
	if _, err := k.CoreV1().Namespaces().Patch(ctx, name, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"extra":"x"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitShort, "the update handler", func() (bool, error) { return updated.count() == 1, nil })
	if n := created.count(); n != 1 {
		t.Errorf("creation handler called %d times, want 1", n)
	}
}
