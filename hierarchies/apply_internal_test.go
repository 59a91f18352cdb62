package hierarchies

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/kopfgo/kopfgo/internal/handlers"
)

func TestApplyBodyOfEachKindOfObject(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  any
		want string
	}{
		{"typed: TypeMeta from the Go type, no empty creationTimestamp",
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Data: map[string]string{"a": "1"}},
			`{"apiVersion":"v1","data":{"a":"1"},"kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"}}`},
		{"typed: an empty status is dropped",
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s"}},
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{}}`},
		{"apply configuration: only the fields set",
			corev1ac.ConfigMap("c", "ns").WithData(map[string]string{"b": "2"}),
			`{"apiVersion":"v1","data":{"b":"2"},"kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"}}`},
		{"unstructured, with a large integer kept exact",
			&unstructured.Unstructured{Object: map[string]any{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
				"metadata": map[string]any{"name": "k"}, "spec": map[string]any{"n": int64(9007199254740993)}}},
			`{"apiVersion":"kopf.dev/v1","kind":"KopfExample","metadata":{"name":"k"},"spec":{"n":9007199254740993}}`},
		{"map",
			map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "x"}},
			`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := applyBody(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(body)
			if string(got) != tc.want {
				t.Errorf("body = %s\nwant   %s", got, tc.want)
			}
		})
	}
	for _, bad := range []any{"text", []int{1}, struct{ Name string }{"x"}} {
		if _, err := applyBody(bad); err == nil {
			t.Errorf("applyBody(%#v): no error", bad)
		}
	}
}

// An applied child is adopted as Kopf's adopt does it, named exactly after
// its owner when it has no name (apply cannot generate names), and the
// caller's object is left alone.
func TestApplyAdoptsACopy(t *testing.T) {
	owner := map[string]any{"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{"name": "kex", "namespace": "ns", "uid": "u-1", "labels": map[string]any{"app": "a"}}}
	child := &corev1.ConfigMap{Data: map[string]string{"a": "1"}}
	body, err := applyBody(child)
	if err != nil {
		t.Fatal(err)
	}
	if err := Adopt(body, owner, Strict()); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(body["metadata"])
	want := `{"labels":{"app":"a"},"name":"kex","namespace":"ns","ownerReferences":[{"apiVersion":"kopf.dev/v1","blockOwnerDeletion":true,"controller":true,"kind":"KopfExample","name":"kex","uid":"u-1"}]}`
	if string(got) != want {
		t.Errorf("metadata = %s\nwant       %s", got, want)
	}
	if child.Name != "" || len(child.OwnerReferences) != 0 {
		t.Errorf("the caller's object changed: %+v", child.ObjectMeta)
	}
	body, err = applyBody(corev1ac.ConfigMap("", ""))
	if err != nil {
		t.Fatal(err)
	}
	if err := Adopt(body, owner, Strict()); err != nil {
		t.Fatal(err)
	}
	if md := body["metadata"].(map[string]any); md["name"] != "kex" || md["namespace"] != "ns" {
		t.Errorf("an apply configuration with empty names: metadata = %v, want the owner's name and namespace", md)
	}
}

func TestDecodeAppliedIntoTheGivenType(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c", "namespace": "ns"}, "data": map[string]any{"a": "1"}}}
	cm, err := decodeApplied[*corev1.ConfigMap](u)
	if err != nil || cm.Name != "c" || cm.Data["a"] != "1" || cm.Kind != "ConfigMap" {
		t.Errorf("typed: %+v, %v", cm, err)
	}
	ac, err := decodeApplied[*corev1ac.ConfigMapApplyConfiguration](u)
	if err != nil || *ac.Name != "c" || ac.Data["a"] != "1" {
		t.Errorf("apply configuration: %+v, %v", ac, err)
	}
	if got, err := decodeApplied[*unstructured.Unstructured](u); err != nil || got != u {
		t.Errorf("unstructured: %v, %v", got, err)
	}
	if got, err := decodeApplied[map[string]any](u); err != nil || got["kind"] != "ConfigMap" {
		t.Errorf("map: %v, %v", got, err)
	}
}

func TestApplyNeedsACluster(t *testing.T) {
	_, err := Apply(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}, nil)
	if !errors.Is(err, errNoClient) {
		t.Errorf("Apply without a cluster in ctx = %v, want errNoClient", err)
	}
	// Every handler's argument embeds handlers.Object, as this one does.
	arg := &struct{ handlers.Object }{}
	if _, err := Apply(context.Background(), arg, nil); !errors.Is(err, ErrHandledObject) {
		t.Errorf("Apply of the handled object = %v, want ErrHandledObject", err)
	}
	// An option of another helper is that option's error, not ignored.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	_, err = Apply(context.Background(), cm, nil, FieldManager("m"), Strict())
	if want := "hierarchies.Strict() does not fit Apply: it fits Adopt, HarmonizeNaming; remove it"; err == nil || err.Error() != want {
		t.Errorf("Apply with Strict() = %v, want %q", err, want)
	}
	if err := Adopt(cm, map[string]any{}, ForceConflicts()); err == nil || err.Error() != "hierarchies.ForceConflicts() does not fit Adopt: it fits Apply; remove it" {
		t.Errorf("Adopt with ForceConflicts() = %v, want the misfit error", err)
	}
}
