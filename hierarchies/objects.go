package hierarchies

import (
	"errors"
	"fmt"
	"path"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kopfgo/kopfgo/internal/handlers"
)

// target is one object to change: a body as a map, or a typed object.
type target struct {
	m   map[string]any
	obj metav1.Object
}

// collect flattens obj into the objects to change: obj itself, or each
// element of a slice of objects (Kopf's walk), each followed by its nested
// structures at the given dotted paths when they exist.
func collect(obj any, nested []string) ([]target, error) {
	var out []target
	err := walk(obj, func(t target) error {
		out = append(out, t)
		for _, p := range nested {
			n, ok, err := t.nested(p)
			if err != nil {
				return err
			}
			if ok {
				out = append(out, n)
			}
		}
		return nil
	})
	return out, err
}

func walk(obj any, fn func(target) error) error {
	if b, ok := handlerBody(obj); ok {
		obj = b
	}
	switch o := obj.(type) {
	case nil:
		return fmt.Errorf("no object given (nil)")
	case map[string]any:
		if o == nil {
			return fmt.Errorf("no object given (a nil map)")
		}
		if err := checkMeta(o); err != nil {
			return err
		}
		return fn(target{m: o})
	case *unstructured.Unstructured:
		if o == nil {
			return fmt.Errorf("no object given (a nil *unstructured.Unstructured)")
		}
		if o.Object == nil {
			o.Object = map[string]any{}
		}
		return walk(o.Object, fn)
	case *unstructured.UnstructuredList:
		if o == nil {
			return fmt.Errorf("no object given (a nil *unstructured.UnstructuredList)")
		}
		for i := range o.Items {
			if err := walk(&o.Items[i], fn); err != nil {
				return err
			}
		}
		return nil
	case metav1.Object:
		if v := reflect.ValueOf(o); v.Kind() == reflect.Pointer && v.IsNil() {
			return fmt.Errorf("no object given (a nil %T)", o)
		}
		return fn(target{obj: o})
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
			if err := walk(e.Interface(), fn); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unsupported object type %T: use map[string]any, *unstructured.Unstructured, a client-go typed object (a pointer, e.g. *corev1.Pod), or a slice of them", obj)
}

func checkMeta(m map[string]any) error {
	if md, ok := m["metadata"]; ok && md != nil {
		if _, ok := md.(map[string]any); !ok {
			return fmt.Errorf("metadata is a %T, not a map[string]any", md)
		}
	}
	return nil
}

// meta returns the map's metadata, creating it when absent.
func (t target) meta() map[string]any {
	md, _ := t.m["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		t.m["metadata"] = md
	}
	return md
}

// nested resolves a dotted path (e.g. "spec.template") to a structure that
// has metadata of its own. A missing structure is not an error: there is
// nothing to change (compat: hierarchies-labels).
func (t target) nested(p string) (target, bool, error) {
	keys := strings.Split(p, ".")
	if t.m != nil {
		var cur any = t.m
		for _, k := range keys {
			m, ok := cur.(map[string]any)
			if !ok {
				return target{}, false, fmt.Errorf("nested %q: cannot look up %q in a %T", p, k, cur)
			}
			if cur, ok = m[k]; !ok || cur == nil {
				return target{}, false, nil
			}
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return target{}, false, fmt.Errorf("nested %q is a %T, not a structure with metadata", p, cur)
		}
		return target{m: m}, true, checkMeta(m)
	}
	v := reflect.ValueOf(t.obj)
	for _, k := range keys {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return target{}, false, nil
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return target{}, false, fmt.Errorf("nested %q: cannot look up %q in a %s", p, k, v.Type())
		}
		f, ok := fieldByJSONName(v, k)
		if !ok {
			return target{}, false, nil
		}
		v = f
	}
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return target{}, false, nil
	}
	if v.Kind() != reflect.Pointer && v.CanAddr() {
		v = v.Addr()
	}
	o, ok := v.Interface().(metav1.Object)
	if !ok {
		return target{}, false, fmt.Errorf("nested %q is a %s, which has no metadata", p, v.Type())
	}
	return target{obj: o}, true, nil
}

// fieldByJSONName finds the field serialised under name, looking into
// inlined embedded structs as encoding/json does.
func fieldByJSONName(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" {
			fv := v.Field(i)
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			if fv.Kind() == reflect.Struct {
				if found, ok := fieldByJSONName(fv, name); ok {
					return found, true
				}
			}
			continue
		}
		if tag == name || tag == "" && strings.EqualFold(f.Name, name) {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// Identity is what the helpers need to know of an owner, and events of the
// object they are about.
type Identity struct {
	APIVersion string
	Kind       string
	Name       string
	UID        string
	Namespace  string // "" for cluster-scoped objects
	Labels     map[string]string
}

// identityOf reads the identity of one object: a map, an
// *unstructured.Unstructured or a typed object. Bodies are taken as they
// are; a typed object with an empty TypeMeta gets its apiVersion and kind
// from its Go type when it is one of k8s.io/api's, and is an error
// otherwise, since a reference without them points nowhere.
func identityOf(obj any) (Identity, error) {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		if o == nil {
			return Identity{}, fmt.Errorf("no object given (a nil *unstructured.Unstructured)")
		}
		return identityOf(o.Object)
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
		apiVersion, kind, err := typeMeta(o)
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

// typeMeta returns the apiVersion and kind of a typed object: from its
// TypeMeta when set, else from its Go type for the types of k8s.io/api
// (client-go's typed clients return objects with an empty TypeMeta).
func typeMeta(o metav1.Object) (apiVersion, kind string, err error) {
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
	err := walk(obj, func(t target) error {
		var o any = t.obj
		if t.m != nil {
			o = t.m
		}
		id, err := identityOf(o)
		out = append(out, id)
		return err
	})
	return out, err
}

// ErrHandledObject is the error of a helper given the handler's own
// argument as the object to change: the handled object is the operator's
// copy, and changing it in place would corrupt the operator's view of it.
var ErrHandledObject = errors.New("the handled object cannot be changed in place: put changes into c.Patch")

// isHandlerArgument reports whether obj is a handler's argument, of any
// kind, typed or not: an owner to name, never an object to change.
func isHandlerArgument(obj any) bool {
	_, ok := handlerBody(obj)
	return ok
}

// refuseHandled refuses the handler's own argument as an object to change.
func refuseHandled(obj any) error {
	if isHandlerArgument(obj) {
		return ErrHandledObject
	}
	return nil
}

// ownerIdentity reads the identity of an owner, which may be the handler's
// argument.
func ownerIdentity(owner any) (Identity, error) {
	if b, ok := handlerBody(owner); ok {
		return identityOf(b)
	}
	return identityOf(owner)
}

var objectType = reflect.TypeFor[handlers.Object]()

// handlerBody returns the body of a handler's argument. Every argument of
// kopfgo's handlers embeds handlers.Object: *kopfgo.Change, *kopfgo.Spawn,
// *kopfgo.WatchEvent, *kopfgo.Object, and the typed forms
// (*kopfgo.TypedChange[T], …), which this package, below kopfgo, cannot
// name.
func handlerBody(obj any) (map[string]any, bool) {
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
