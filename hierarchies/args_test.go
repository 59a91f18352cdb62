package hierarchies_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/hierarchies"
	"github.com/kopfgo/kopfgo/internal/objects"
)

type spec struct {
	Field string `json:"field"`
}

// handledObject is the object as a handler's argument carries it.
func handledObject() kopfgo.Object {
	return kopfgo.Object{Body: map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{"name": "kopf-example-1", "namespace": "ns1", "uid": "uid-1", "labels": map[string]any{"a": "b"}},
	}}
}

// The arguments of every kind of handler, untyped and typed: each names the
// owner, and none may be changed in place.
func handlerArgs() map[string]any {
	c := &kopfgo.Change{Object: handledObject()}
	o := handledObject()
	return map[string]any{
		"*Change":        c,
		"Change":         *c,
		"*Object":        &o,
		"Object":         o,
		"*WatchEvent":    &kopfgo.WatchEvent{Object: handledObject()},
		"*Spawn":         &kopfgo.Spawn{Object: handledObject()},
		"*TypedChange":   &kopfgo.TypedChange[spec]{Change: c},
		"*FieldChange":   &kopfgo.FieldChange[spec, string]{Change: c},
		"*TypedSpawn":    &kopfgo.TypedSpawn[spec]{Spawn: &kopfgo.Spawn{Object: handledObject()}},
		"*TypedEvent":    &kopfgo.TypedEvent[spec]{WatchEvent: &kopfgo.WatchEvent{Object: handledObject()}},
		"*TypedObject":   &kopfgo.TypedObject[spec]{Object: &o},
		"[]any{*Change}": []any{c},
	}
}

func TestHandlerArgumentsNameTheOwner(t *testing.T) {
	for name, c := range handlerArgs() {
		ids, err := objects.Identities(c) // what events about c name
		if err != nil || len(ids) != 1 || ids[0].UID != "uid-1" || ids[0].Kind != "KopfExample" {
			t.Errorf("%s: identities %+v, %v", name, ids, err)
		}
		if strings.HasPrefix(name, "[]") {
			continue // one owner, not a list
		}
		pod := &corev1.Pod{}
		if err := hierarchies.Adopt(pod, c, hierarchies.Strict()); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if pod.Name != "kopf-example-1" || pod.Namespace != "ns1" || pod.Labels["a"] != "b" ||
			len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].UID != "uid-1" {
			t.Errorf("%s: adopted pod: %+v", name, pod.ObjectMeta)
		}
	}
	// A typed argument whose embedded Change is nil names nothing.
	if err := hierarchies.Adopt(&corev1.Pod{}, &kopfgo.TypedChange[spec]{}); err == nil {
		t.Error("an empty typed argument taken as an owner")
	}
}

func TestHandledObjectIsNotChangedInPlace(t *testing.T) {
	pod := &corev1.Pod{}
	pod.UID, pod.Name, pod.APIVersion, pod.Kind = "uid-pod", "p", "v1", "Pod"
	for name, c := range handlerArgs() {
		if strings.HasPrefix(name, "[]") {
			continue
		}
		for helper, err := range map[string]error{
			"Adopt":                hierarchies.Adopt(c, pod),
			"Label":                hierarchies.Label(c, map[string]string{"x": "y"}),
			"AppendOwnerReference": hierarchies.AppendOwnerReference(c, pod),
			"RemoveOwnerReference": hierarchies.RemoveOwnerReference(c, pod),
			"HarmonizeNaming":      hierarchies.HarmonizeNaming(c, "x"),
			"AdjustNamespace":      hierarchies.AdjustNamespace(c, "x"),
		} {
			if err == nil || !strings.Contains(err.Error(), "c.Patch") {
				t.Errorf("%s on the handled %s: %v, want a refusal pointing to c.Patch", helper, name, err)
			}
		}
	}
}

// An option given to a helper it does not fit is an error naming the
// option and the helpers it fits, and changes nothing.
func TestMisfitOptions(t *testing.T) {
	owner := handledObject().Body
	for name, call := range map[string]func(*corev1.Pod) error{
		"Strict on Label": func(p *corev1.Pod) error {
			return hierarchies.Label(p, map[string]string{"a": "b"}, hierarchies.Strict())
		},
		"Nested on HarmonizeNaming": func(p *corev1.Pod) error { return hierarchies.HarmonizeNaming(p, "x", hierarchies.Nested("spec")) },
		"Controller on Adopt":       func(p *corev1.Pod) error { return hierarchies.Adopt(p, owner, hierarchies.Controller(false)) },
		"Forced on OwnerReference": func(p *corev1.Pod) error {
			_, err := hierarchies.OwnerReference(owner, hierarchies.Forced())
			return err
		},
		"BlockOwnerDeletion on Label": func(p *corev1.Pod) error { return hierarchies.Label(p, nil, hierarchies.BlockOwnerDeletion(true)) },
		"zero Option":                 func(p *corev1.Pod) error { return hierarchies.AdjustNamespace(p, "x", hierarchies.Option{}) },
	} {
		pod := &corev1.Pod{}
		err := call(pod)
		if err == nil || !strings.Contains(err.Error(), "hierarchies.") {
			t.Errorf("%s: %v, want an error naming the option", name, err)
		}
		if pod.Name != "" || pod.Namespace != "" || len(pod.Labels) != 0 || len(pod.OwnerReferences) != 0 {
			t.Errorf("%s: the pod changed: %+v", name, pod.ObjectMeta)
		}
	}
	err := hierarchies.Label(&corev1.Pod{}, nil, hierarchies.Strict())
	if want := "hierarchies.Strict() does not fit Label: it fits Adopt, HarmonizeNaming; remove it"; err == nil || err.Error() != want {
		t.Errorf("the message: %v, want %q", err, want)
	}
}
