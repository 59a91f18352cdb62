//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/hierarchies"
)

// typedKex is a user's Go struct for the example CRD.
type typedKex struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Field    string   `json:"field"`
		Replicas int32    `json:"replicas"`
		Items    []string `json:"items"`
	} `json:"spec"`
}

type typedResult struct {
	Field     string `json:"field"`
	ConfigMap string `json:"configMap"`
	Items     int    `json:"items"`
}

func typedCreate(ctx context.Context, c *kopfgo.TypedChange[*typedKex]) (any, error) {
	cm := &corev1.ConfigMap{Data: map[string]string{"field": c.Obj.Spec.Field}}
	if err := hierarchies.Adopt(cm, c); err != nil {
		return nil, kopfgo.Permanent(err)
	}
	created, err := kopfgo.ClientsFrom(ctx).Kube.CoreV1().ConfigMaps(c.Obj.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	return &typedResult{Field: c.Obj.Spec.Field, ConfigMap: created.Name, Items: len(c.Obj.Spec.Items)}, nil
}

func typedField(ctx context.Context, c *kopfgo.FieldChange[*typedKex, *int32]) (any, error) {
	if c.Old == nil || c.New == nil {
		return nil, nil
	}
	// The dynamic client reads the object as the API has it now.
	u, err := kopfgo.ClientsFrom(ctx).Dynamic.Resource(kexGVR).Namespace(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	c.Logger.Info(fmt.Sprintf("replicas %d -> %d (uid %s)", *c.Old, *c.New, u.GetUID()))
	return nil, nil
}

// Typed handlers on a user's CRD struct: decoded objects, a struct result
// in status, typed field values, the operator's clients; a wrong type in the
// spec is the handler's failure naming the field, with the object left as
// it was.
func TestTypedHandlersAndClients(t *testing.T) {
	ns := namespace(t)
	log := embedded(t, ns, func(op *kopfgo.Operator) {
		kopfgo.OnCreate(op.On, "kopfexamples", typedCreate)
		kopfgo.OnField(op.On, "kopfexamples", "spec.replicas", typedField)
	})

	good := objYAML(t)
	unstructured.SetNestedField(good, int64(2), "spec", "replicas")
	createKex(t, ns, good)
	got := waitKex(t, ns, "kopf-example-1", "the typed result", handled)
	res, _, _ := unstructured.NestedMap(got.Object, "status", "typedCreate")
	if res["field"] != "value" || res["items"] != int64(2) || !strings.HasPrefix(fmt.Sprint(res["configMap"]), "kopf-example-1-") {
		t.Fatalf("status.typedCreate = %v", res)
	}
	cms, err := kube(t).CoreV1().ConfigMaps(ns).Get(context.Background(), res["configMap"].(string), metav1.GetOptions{})
	if err != nil || cms.Data["field"] != "value" || len(cms.OwnerReferences) != 1 {
		t.Fatalf("the child: %v, %+v", err, cms)
	}
	patchKex(t, ns, "kopf-example-1", `{"spec":{"replicas":3}}`)
	log.WaitFor(t, "replicas 2 -> 3 (uid "+string(got.GetUID())+")", 1)

	bad := objYAML(t)
	unstructured.SetNestedField(bad, "kopf-example-bad", "metadata", "name")
	unstructured.SetNestedField(bad, "three", "spec", "replicas")
	createKex(t, ns, bad)
	line := "Handler 'typedCreate' failed with an exception and will try again in 60 seconds: the object does not decode into *e2e.typedKex: field spec.replicas: a JSON string where int32 is expected"
	log.WaitFor(t, line, 1)
	obj := getKex(t, ns, "kopf-example-bad")
	if v, _, _ := unstructured.NestedString(obj.Object, "spec", "replicas"); v != "three" {
		t.Errorf("spec.replicas = %q, want it left as it was", v)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "typedCreate"); found {
		t.Errorf("a result was stored for an object that did not decode: %v", obj.Object["status"])
	}
	if n := log.Count("Handler 'typedCreate' succeeded."); n != 1 {
		t.Errorf("%d successes, want 1 (the good object only)", n)
	}
}
