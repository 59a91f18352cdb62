//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/cluster"
	"github.com/kopfgo/kopfgo/hierarchies"
)

// TestAppliedChildIsSharedByTwoManagers: the operator's handlers apply a
// ConfigMap child of each KopfExample (field manager "kopfgo-e2e", typed,
// adopted: owner reference, the parent's name, namespace and labels); a
// second manager applies another field of the same child. Each keeps its
// own field through the other's applies; a field of the operator's that
// the other manager sets to another value is a conflict, unless forced.
func TestAppliedChildIsSharedByTwoManagers(t *testing.T) {
	ns := namespace(t)
	apply := func(ctx context.Context, c *kopfgo.Change) (any, error) {
		cm := corev1ac.ConfigMap("", "").WithData(map[string]string{"field": fmt.Sprint(c.Spec["field"])})
		_, err := hierarchies.Apply(ctx, cm, c, hierarchies.FieldManager("kopfgo-e2e"))
		return nil, err
	}
	log := embedded(t, ns, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", apply, kopfgo.ID("apply_create"))
		op.On.Update("kopfexamples", apply, kopfgo.ID("apply_update"))
	})
	kex := createKex(t, ns, objYAML(t))
	log.WaitFor(t, "Handler 'apply_create' succeeded.", 1)

	k := kube(t)
	get := func() map[string]string {
		t.Helper()
		cm, err := k.CoreV1().ConfigMaps(ns).Get(context.Background(), "kopf-example-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data
	}
	cm, err := k.CoreV1().ConfigMaps(ns).Get(context.Background(), "kopf-example-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refs := cm.OwnerReferences
	if len(refs) != 1 || refs[0].UID != kex.GetUID() || refs[0].Kind != "KopfExample" || refs[0].Name != "kopf-example-1" ||
		refs[0].Controller == nil || !*refs[0].Controller || refs[0].BlockOwnerDeletion == nil || !*refs[0].BlockOwnerDeletion {
		t.Errorf("owner references = %+v, want the KopfExample's, controller and blocking its deletion", refs)
	}
	if cm.Labels["somelabel"] != "somevalue" {
		t.Errorf("labels = %v, want the parent's", cm.Labels)
	}

	// The other manager applies from outside the operator: a ctx of
	// WithClients, as a test or another program has.
	other := kopfgo.WithClients(context.Background(), cluster.Shared(t).RESTConfig())
	mine := corev1ac.ConfigMap("kopf-example-1", ns).WithData(map[string]string{"other": "b"})
	if _, err := hierarchies.Apply(other, mine, nil, hierarchies.FieldManager("other")); err != nil {
		t.Fatal(err)
	}
	if d := get(); d["field"] != "value" || d["other"] != "b" {
		t.Fatalf("data after the other manager's apply = %v, want both fields", d)
	}

	// The operator applies again (the parent changed): the other
	// manager's field stays.
	patchKex(t, ns, "kopf-example-1", `{"spec":{"field":"changed"}}`)
	eventually(t, waitShort, "the operator to apply the change", func() (bool, error) {
		d := get()
		return d["field"] == "changed", fmt.Errorf("data = %v", d)
	})
	if d := get(); d["other"] != "b" {
		t.Errorf("the operator's apply dropped the other manager's field: %v", d)
	}

	// The operator's field, set to another value by the other manager, is
	// a conflict naming the manager; forced, it is taken over.
	taking := corev1ac.ConfigMap("kopf-example-1", ns).WithData(map[string]string{"other": "b", "field": "mine"})
	_, err = hierarchies.Apply(other, taking, nil, hierarchies.FieldManager("other"))
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "kopfgo-e2e") || !strings.Contains(err.Error(), "force") {
		t.Fatalf("a conflicting apply = %v, want a conflict naming the operator's manager and forcing", err)
	}
	if d := get(); d["field"] != "changed" {
		t.Errorf("a refused apply changed the data: %v", d)
	}
	applied, err := hierarchies.Apply(other, taking, nil, hierarchies.FieldManager("other"), hierarchies.ForceConflicts())
	if err != nil {
		t.Fatal(err)
	}
	if applied.Data["field"] != "mine" || applied.Data["other"] != "b" {
		t.Errorf("forced apply returned %v", applied.Data)
	}
	cm, err = k.CoreV1().ConfigMaps(ns).Get(context.Background(), "kopf-example-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	managers := map[string]string{}
	for _, mf := range cm.ManagedFields {
		managers[mf.Manager] = string(mf.FieldsV1.Raw)
	}
	if !strings.Contains(managers["other"], `"f:field"`) || strings.Contains(managers["kopfgo-e2e"], `"f:field"`) ||
		!strings.Contains(managers["kopfgo-e2e"], `"f:ownerReferences"`) {
		t.Errorf("managed fields after the forced apply = %v, want field moved to other, the owner reference kept by kopfgo-e2e", managers)
	}
}
