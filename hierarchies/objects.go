package hierarchies

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopfgo/kopfgo/internal/objects"
)

// target is one object to change: a body as a map, or a typed object.
type target objects.Target

// collect flattens obj into the objects to change: obj itself, or each
// element of a slice of objects (Kopf's walk), each followed by its nested
// structures at the given dotted paths when they exist.
func collect(obj any, nested []string) ([]target, error) {
	var out []target
	err := objects.Walk(obj, func(o objects.Target) error {
		t := target(o)
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

// meta returns the map's metadata, creating it when absent.
func (t target) meta() map[string]any {
	md, _ := t.M["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		t.M["metadata"] = md
	}
	return md
}

// nested resolves a dotted path (e.g. "spec.template") to a structure that
// has metadata of its own. A missing structure is not an error: there is
// nothing to change (compat: hierarchies-labels).
func (t target) nested(p string) (target, bool, error) {
	keys := strings.Split(p, ".")
	if t.M != nil {
		var cur any = t.M
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
		return target{M: m}, true, objects.CheckMeta(m)
	}
	v := reflect.ValueOf(t.Obj)
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
	return target{Obj: o}, true, nil
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

// ErrHandledObject is the error of a helper given the handler's own
// argument as the object to change: the handled object is the operator's
// copy, and changing it in place would corrupt the operator's view of it.
var ErrHandledObject = errors.New("the handled object cannot be changed in place: put changes into c.Patch")

// isHandlerArgument reports whether obj is a handler's argument, of any
// kind, typed or not: an owner to name, never an object to change.
func isHandlerArgument(obj any) bool {
	_, ok := objects.HandlerBody(obj)
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
func ownerIdentity(owner any) (objects.Identity, error) {
	if b, ok := objects.HandlerBody(owner); ok {
		return objects.IdentityOf(b)
	}
	return objects.IdentityOf(owner)
}
