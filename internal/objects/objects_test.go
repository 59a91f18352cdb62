package objects

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// TypeMeta tells the apiVersion and kind of every kind of k8s.io/api, as
// client-go's scheme registers them.
func TestTypeMetaOfAPITypes(t *testing.T) {
	n := 0
	for gvk, typ := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || !strings.HasPrefix(typ.PkgPath(), "k8s.io/api/") || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		obj, ok := reflect.New(typ).Interface().(metav1.Object)
		if !ok {
			continue // e.g. option structs without metadata
		}
		apiVersion, kind, err := TypeMeta(obj)
		if err != nil {
			t.Errorf("%s: %v", gvk, err)
			continue
		}
		if apiVersion != gvk.GroupVersion().String() || kind != gvk.Kind {
			t.Errorf("%s: got %s %s", gvk, apiVersion, kind)
		}
		n++
	}
	if n < 50 {
		t.Errorf("only %d kinds checked: is the scheme empty?", n)
	}
	// TypeMeta, when set, wins.
	custom := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v2", Kind: "Thing"}}
	if a, k, _ := TypeMeta(custom); a != "example.com/v2" || k != "Thing" {
		t.Errorf("set TypeMeta: %s %s", a, k)
	}
	if _, _, err := TypeMeta(&metav1.ObjectMeta{}); err == nil || !strings.Contains(err.Error(), "TypeMeta") {
		t.Errorf("a type outside k8s.io/api: %v, want an error asking for TypeMeta", err)
	}
}

func TestIdentityOf(t *testing.T) {
	want := Identity{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u", Namespace: "ns", Labels: map[string]string{"a": "b"}}
	for _, obj := range []any{
		map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "uid": "u", "namespace": "ns", "labels": map[string]any{"a": "b"}}},
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "uid": "u", "namespace": "ns", "labels": map[string]any{"a": "b"}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u", Namespace: "ns", Labels: map[string]string{"a": "b"}}},
	} {
		got, err := IdentityOf(obj)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%T: %+v, %v; want %+v", obj, got, err, want)
		}
	}
}
