package hierarchies

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/objects"
)

// defaultFieldManager is the field manager of Apply without FieldManager.
const defaultFieldManager = "kopfgo"

// FieldManager names the manager that owns the fields Apply sets (default
// "kopfgo"). Give each writer of a shared object its own name:
// each then owns, keeps and may drop its own fields. It fits Apply.
func FieldManager(name string) Option {
	return Option{"FieldManager()", forApply, func(o *options) { o.manager = name }}
}

// ForceConflicts takes over the fields that other managers own and Apply
// sets to other values, instead of failing with a conflict. It fits Apply.
func ForceConflicts() Option {
	return Option{"ForceConflicts()", forApply, func(o *options) { o.force = true }}
}

// Apply creates or updates obj by server-side apply (compat:
// hierarchies-apply), the one helper here that calls the API: the API server merges it with what other field
// managers own, so several writers share one object without overwriting
// each other's fields; a field that another manager owns with another
// value fails with a conflict (apierrors.IsConflict), naming the fields
// and their managers, unless ForceConflicts. With an owner (usually the
// handler's c), obj is adopted first, as Adopt does: an owner reference
// (controller, blocking the owner's deletion), the owner's namespace and
// labels, and the owner's exact name when obj has none (apply needs a
// name, so there is no generateName). obj is not changed.
//
// obj is a client-go typed object (*corev1.ConfigMap; its TypeMeta is
// filled in from the Go type), an apply configuration of client-go
// (k8s.io/client-go/applyconfigurations), a *unstructured.Unstructured or
// a map[string]any; the result is the object as applied, of the same type.
// Typed objects send their zero values too (such as a Deployment's empty
// strategy), which Apply then owns: for objects shared with other
// managers, prefer apply configurations or unstructured objects, which
// hold only the fields set.
//
// The request goes through the operator's client, its flow control and
// retries, from the handler's ctx; ctx from kopfgo.WithClients (tests)
// works too.
//
//	cm, err := hierarchies.Apply(ctx, &corev1.ConfigMap{Data: data}, c, hierarchies.FieldManager("my-operator"))
func Apply[T any](ctx context.Context, obj T, owner any, opts ...Option) (T, error) {
	var zero T
	if err := refuseHandled(obj); err != nil {
		return zero, err
	}
	cfg, err := configure(forApply, opts)
	if err != nil {
		return zero, err
	}
	body, err := applyBody(obj)
	if err != nil {
		return zero, err
	}
	if owner != nil {
		if err := Adopt(body, owner, Strict()); err != nil {
			return zero, err
		}
	}
	client, err := kube.ClientOf(ctx)
	if err != nil {
		return zero, err
	}
	if client == nil {
		return zero, errNoClient
	}
	u, err := client.ServerSideApply(ctx, body, cfg.manager, cfg.force)
	if err != nil {
		return zero, err
	}
	return decodeApplied[T](u)
}

// applyBody is obj as JSON fields, with its apiVersion and kind: what is
// sent, and what Adopt changes. Typed objects leave an empty
// creationTimestamp and status behind, which Apply would then own as
// empty; they are dropped.
func applyBody(obj any) (map[string]any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding the object to apply: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // integers stay integers, however large
	var body map[string]any
	if err := dec.Decode(&body); err != nil || body == nil {
		return nil, fmt.Errorf("the object to apply is a %T, not an object: pass a typed object, an apply configuration, an unstructured object or a map", obj)
	}
	if body["apiVersion"] == nil || body["kind"] == nil {
		mo, ok := obj.(metav1.Object)
		if !ok {
			return nil, fmt.Errorf("the %T to apply has no apiVersion and kind: set them", obj)
		}
		apiVersion, kind, err := objects.TypeMeta(mo)
		if err != nil {
			return nil, err
		}
		body["apiVersion"], body["kind"] = apiVersion, kind
	}
	if md, _ := body["metadata"].(map[string]any); md != nil {
		if ts, ok := md["creationTimestamp"]; ok && ts == nil {
			delete(md, "creationTimestamp")
		}
		// An empty name or namespace (corev1ac.ConfigMap("", "")) is none:
		// adopting then gives the owner's.
		for _, k := range []string{"name", "namespace"} {
			if md[k] == "" {
				delete(md, k)
			}
		}
	}
	if st, ok := body["status"].(map[string]any); ok && hollow(st) {
		delete(body, "status")
	}
	return body, nil
}

// hollow: m holds nothing but maps that hold nothing, as a typed object's
// zero status does (a Service's {"loadBalancer":{}}).
func hollow(m map[string]any) bool {
	for _, v := range m {
		if sub, ok := v.(map[string]any); !ok || !hollow(sub) {
			return false
		}
	}
	return true
}

// decodeApplied returns the applied object as a T, the type Apply was
// given.
func decodeApplied[T any](u *unstructured.Unstructured) (T, error) {
	var out T
	switch p := any(&out).(type) {
	case **unstructured.Unstructured:
		*p = u
		return out, nil
	case *map[string]any:
		*p = u.Object
		return out, nil
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return out, err
	}
	target := any(&out)
	if v := reflect.ValueOf(&out).Elem(); v.Kind() == reflect.Pointer {
		v.Set(reflect.New(v.Type().Elem()))
		target = v.Interface()
	}
	if err := json.Unmarshal(data, target); err != nil {
		return out, fmt.Errorf("decoding the applied %s into a %T: %w", u.GetKind(), out, err)
	}
	return out, nil
}

// errNoClient: Apply was called with a ctx that carries no credentials.
var errNoClient = errors.New("no cluster in ctx: call hierarchies.Apply with a handler's ctx (not startup or login handlers'), or one made by kopfgo.WithClients")
