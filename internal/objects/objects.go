package objects

import (
	"fmt"
	"path"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kopfgo/kopfgo/internal/handlers"
)

// Target is one object: a body as a map, or a typed object.
type Target struct {
	M   map[string]any
	Obj metav1.Object
}

// Walk calls fn for obj, or for each object of obj when it is a slice or
// a list (Kopf's walk); a handler's argument stands for its body.
func Walk(obj any, fn func(Target) error) error {
	if b, ok := HandlerBody(obj); ok {
		obj = b
	}
	switch o := obj.(type) {
	case nil:
		return fmt.Errorf("no object given (nil)")
	case map[string]any:
		if o == nil {
			return fmt.Errorf("no object given (a nil map)")
		}
		if err := CheckMeta(o); err != nil {
			return err
		}
		return fn(Target{M: o})
	case *unstructured.Unstructured:
		if o == nil {
			return fmt.Errorf("no object given (a nil *unstructured.Unstructured)")
		}
		if o.Object == nil {
			o.Object = map[string]any{}
		}
		return Walk(o.Object, fn)
	case *unstructured.UnstructuredList:
		if o == nil {
			return fmt.Errorf("no object given (a nil *unstructured.UnstructuredList)")
		}
		for i := range o.Items {
			if err := Walk(&o.Items[i], fn); err != nil {
				return err
			}
		}
		return nil
	case metav1.Object:
		if v := reflect.ValueOf(o); v.Kind() == reflect.Pointer && v.IsNil() {
			return fmt.Errorf("no object given (a nil %T)", o)
		}
		return fn(Target{Obj: o})
	}
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Slice || v.Kind() == reflect.Array {
		for i := range v.Len() {
			e := v.Index(i)
			// Typed objects in a []corev1.Pod are values: change them in
			// place through their address. Arrays passed by value are not
			// addressable, and changing a copy would be a silent no-op.
			if e.Kind() == reflect.Struct {
				if !e.CanAddr() {
					return fmt.Errorf("cannot change the objects of a %T in place: pass a slice or pointers", obj)
				}
				e = e.Addr()
			}
			if err := Walk(e.Interface(), fn); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unsupported object type %T: use map[string]any, *unstructured.Unstructured, a client-go typed object (a pointer, e.g. *corev1.Pod), or a slice of them", obj)
}

// CheckMeta refuses a body whose metadata is not a map.
func CheckMeta(m map[string]any) error {
	if md, ok := m["metadata"]; ok && md != nil {
		if _, ok := md.(map[string]any); !ok {
			return fmt.Errorf("metadata is a %T, not a map[string]any", md)
		}
	}
	return nil
}

// Identity is what the hierarchies helpers need to know of an owner, and
// events of the object they are about.
type Identity struct {
	APIVersion string
	Kind       string
	Name       string
	UID        string
	Namespace  string // "" for cluster-scoped objects
	Labels     map[string]string
}

// IdentityOf reads the identity of one object: a map, an
// *unstructured.Unstructured or a typed object. Bodies are taken as they
// are; a typed object with an empty TypeMeta gets its apiVersion and kind
// from its Go type when it is one of k8s.io/api's, and is an error
// otherwise, since a reference without them points nowhere.
func IdentityOf(obj any) (Identity, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		if o == nil {
			return Identity{}, fmt.Errorf("no object given (a nil *unstructured.Unstructured)")
		}
		return IdentityOf(o.Object)
	case map[string]any:
		if o == nil {
			return Identity{}, fmt.Errorf("no object given (a nil map)")
		}
		md, _ := o["metadata"].(map[string]any)
		id := Identity{
			APIVersion: str(o["apiVersion"]), Kind: str(o["kind"]),
			Name: str(md["name"]), UID: str(md["uid"]), Namespace: str(md["namespace"]),
		}
		switch ls := md["labels"].(type) {
		case map[string]any:
			id.Labels = make(map[string]string, len(ls))
			for k, v := range ls {
				if s, ok := v.(string); ok {
					id.Labels[k] = s
				}
			}
		case map[string]string:
			id.Labels = ls
		}
		return id, nil
	case metav1.Object:
		if v := reflect.ValueOf(o); v.Kind() == reflect.Pointer && v.IsNil() {
			return Identity{}, fmt.Errorf("no object given (a nil %T)", o)
		}
		apiVersion, kind, err := TypeMeta(o)
		if err != nil {
			return Identity{}, err
		}
		return Identity{
			APIVersion: apiVersion, Kind: kind, Name: o.GetName(), UID: string(o.GetUID()),
			Namespace: o.GetNamespace(), Labels: o.GetLabels(),
		}, nil
	case nil:
		return Identity{}, fmt.Errorf("no object given (nil)")
	}
	return Identity{}, fmt.Errorf("unsupported object type %T: use map[string]any, *unstructured.Unstructured or a client-go typed object (a pointer, e.g. *corev1.Pod)", obj)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// TypeMeta returns the apiVersion and kind of a typed object: from its
// TypeMeta when set, else from its Go type for the types of k8s.io/api
// (client-go's typed clients return objects with an empty TypeMeta).
func TypeMeta(o metav1.Object) (apiVersion, kind string, err error) {
	ro, isRuntime := o.(runtime.Object)
	if isRuntime {
		if gvk := ro.GetObjectKind().GroupVersionKind(); gvk.Kind != "" && gvk.Version != "" {
			return gvk.GroupVersion().String(), gvk.Kind, nil
		}
	}
	t := reflect.TypeOf(o)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// Only kinds are runtime.Objects: a PodTemplateSpec has metadata but is
	// not a kind, and must not pass for one.
	if isRuntime {
		if rest, ok := strings.CutPrefix(t.PkgPath(), "k8s.io/api/"); ok {
			dir, version := path.Split(rest)
			if group, ok := apiGroups[strings.TrimSuffix(dir, "/")]; ok {
				if group == "" {
					return version, t.Name(), nil
				}
				return group + "/" + version, t.Name(), nil
			}
		}
	}
	return "", "", fmt.Errorf("cannot tell the apiVersion and kind of a %s: set its TypeMeta (APIVersion and Kind)", reflect.TypeOf(o))
}

// apiGroups maps the directories of k8s.io/api to their API groups (the
// GroupName of each package's register.go); a test checks it against
// client-go's scheme.
var apiGroups = map[string]string{
	"admission":             "admission.k8s.io",
	"admissionregistration": "admissionregistration.k8s.io",
	"apidiscovery":          "apidiscovery.k8s.io",
	"apiserverinternal":     "internal.apiserver.k8s.io",
	"apps":                  "apps",
	"authentication":        "authentication.k8s.io",
	"authorization":         "authorization.k8s.io",
	"autoscaling":           "autoscaling",
	"batch":                 "batch",
	"certificates":          "certificates.k8s.io",
	"coordination":          "coordination.k8s.io",
	"core":                  "",
	"discovery":             "discovery.k8s.io",
	"events":                "events.k8s.io",
	"extensions":            "extensions",
	"flowcontrol":           "flowcontrol.apiserver.k8s.io",
	"imagepolicy":           "imagepolicy.k8s.io",
	"networking":            "networking.k8s.io",
	"node":                  "node.k8s.io",
	"policy":                "policy",
	"rbac":                  "rbac.authorization.k8s.io",
	"resource":              "resource.k8s.io",
	"scheduling":            "scheduling.k8s.io",
	"storage":               "storage.k8s.io",
	"storagemigration":      "storagemigration.k8s.io",
}

// Identities reads the identity of obj (a handler's argument, a body, a typed
// object), or of each object of a slice: what events name.
func Identities(obj any) ([]Identity, error) {
	var out []Identity
	err := Walk(obj, func(t Target) error {
		var o any = t.Obj
		if t.M != nil {
			o = t.M
		}
		id, err := IdentityOf(o)
		out = append(out, id)
		return err
	})
	return out, err
}

var objectType = reflect.TypeFor[handlers.Object]()

// HandlerBody returns the body of a handler's argument. Every argument of
// kopfgo's handlers embeds handlers.Object: *kopfgo.Change, *kopfgo.Spawn,
// *kopfgo.WatchEvent, *kopfgo.Object, and the typed forms
// (*kopfgo.TypedChange[T], …), which this package, below kopfgo, cannot
// name.
func HandlerBody(obj any) (map[string]any, bool) {
	switch obj.(type) {
	case nil, map[string]any, *unstructured.Unstructured, metav1.Object:
		return nil, false
	}
	v := reflect.ValueOf(obj)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, false
	}
	if v.Type() != objectType {
		f, ok := v.Type().FieldByName("Object")
		if !ok || !f.Anonymous {
			return nil, false
		}
		fv, err := v.FieldByIndexErr(f.Index)
		if err != nil { // a nil embedded pointer on the way
			return nil, false
		}
		if fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				return nil, false
			}
			fv = fv.Elem()
		}
		if fv.Type() != objectType {
			return nil, false
		}
		v = fv
	}
	body, _ := v.FieldByName("Body").Interface().(map[string]any)
	return body, true
}
