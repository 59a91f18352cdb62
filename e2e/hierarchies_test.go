//go:build e2e

package e2e

import (
	"context"
	"regexp"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/hierarchies"
)

// (compat: hierarchies-adopt, hierarchies-naming,
// hierarchies-owner-references): children adopted in a handler, one typed
// (strict, forced, nested) and one a plain body (the defaults), are created by
// the API with the owner reference, the parent's namespace and labels (on both
// levels) and a name after the parent.
func TestAdoptedChildrenAreCreatedAsChildren(t *testing.T) {
	ns := namespace(t)
	log, _ := operatorWith(t, ns, kopfgo.Options{}, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", func(ctx context.Context, c *kopfgo.Change) (any, error) {
			api, err := kubernetes.NewForConfig(kopfgo.RESTConfig(ctx))
			if err != nil {
				return nil, kopfgo.Permanent(err)
			}
			sel := map[string]string{"app": "child"}
			d := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "preset", Namespace: "elsewhere", Labels: map[string]string{"somelabel": "overwritten"}},
				Spec: appsv1.DeploymentSpec{
					Selector: &metav1.LabelSelector{MatchLabels: sel},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "child"}},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
					},
				},
			}
			if err := hierarchies.Adopt(d, c, hierarchies.Strict(), hierarchies.Forced(), hierarchies.Nested("spec.template")); err != nil {
				return nil, kopfgo.Permanent(err)
			}
			if _, err := api.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
				return nil, err
			}
			cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"k": "v"}}
			if err := hierarchies.Adopt(cm, c); err != nil {
				return nil, kopfgo.Permanent(err)
			}
			dyn, err := dynamic.NewForConfig(kopfgo.RESTConfig(ctx))
			if err != nil {
				return nil, kopfgo.Permanent(err)
			}
			u := &unstructured.Unstructured{Object: cm}
			if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{}); err != nil {
				return nil, err
			}
			return nil, nil
		}, kopfgo.ID("create"))
	})
	obj := createKex(t, ns, objYAML(t))
	log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", 1)

	checkOwner := func(what string, refs []metav1.OwnerReference) {
		t.Helper()
		if len(refs) != 1 {
			t.Fatalf("%s: owner references %+v, want one", what, refs)
		}
		r := refs[0]
		if r.APIVersion != "kopf.dev/v1" || r.Kind != "KopfExample" || r.Name != obj.GetName() || r.UID != obj.GetUID() ||
			r.Controller == nil || !*r.Controller || r.BlockOwnerDeletion == nil || !*r.BlockOwnerDeletion {
			t.Errorf("%s: owner reference %+v, want the KopfExample as the controller blocking deletion", what, r)
		}
	}
	d, err := kube(t).AppsV1().Deployments(ns).Get(context.Background(), obj.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the strictly named deployment %s/%s: %v", ns, obj.GetName(), err)
	}
	checkOwner("deployment", d.OwnerReferences)
	if d.Labels["somelabel"] != "somevalue" || d.Spec.Template.Labels["somelabel"] != "somevalue" || d.Spec.Template.Labels["app"] != "child" {
		t.Errorf("deployment labels %v, template labels %v: want the parent's on both levels (forced), the template's own kept", d.Labels, d.Spec.Template.Labels)
	}

	cms, err := kube(t).CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "somelabel=somevalue"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != 1 {
		t.Fatalf("%d adopted configmaps, want 1", len(cms.Items))
	}
	cm := cms.Items[0]
	checkOwner("configmap", cm.OwnerReferences)
	if !regexp.MustCompile(`^kopf-example-1-[a-z0-9]{5}$`).MatchString(cm.Name) {
		t.Errorf("configmap name %q, want the parent's name plus a random suffix", cm.Name)
	}
}
