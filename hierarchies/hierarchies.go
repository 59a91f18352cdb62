package hierarchies

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopfgo/kopfgo/internal/objects"
)

// options collects what the options set for one call of a helper.
type options struct {
	forced, strict bool
	nested         []string
	controller     bool
	block          bool
	manager        string
	force          bool
}

// helper is one of the helpers, or a set of them: what an Option fits.
type helper uint8

const (
	forAdopt helper = 1 << iota
	forLabel
	forNaming
	forNamespace
	forOwnerRef
	forApply
)

var helperNames = []string{"Adopt", "Label", "HarmonizeNaming", "AdjustNamespace", "AppendOwnerReference and OwnerReference", "Apply"}

func (h helper) String() string {
	var names []string
	for i, n := range helperNames {
		if h&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}

// Option configures a helper. Each option fits the helpers its doc names;
// given to another one, it is an error from that helper naming the option,
// rather than ignored. The helpers share one option type so that this
// package's surface stays small: a misfit is caught at the call, whose
// error the caller checks anyway.
type Option struct {
	name string
	fits helper
	set  func(*options)
}

// configure applies opts for the helper h, or says which one does not fit.
func configure(h helper, opts []Option) (options, error) {
	o := options{controller: true, block: true, manager: defaultFieldManager}
	for _, opt := range opts {
		if opt.set == nil {
			return o, fmt.Errorf("an empty hierarchies.Option given to %s: use the package's option functions", h)
		}
		if opt.fits&h == 0 {
			return o, fmt.Errorf("hierarchies.%s does not fit %s: it fits %s; remove it", opt.name, h, opt.fits)
		}
		opt.set(&o)
	}
	return o, nil
}

// start begins the helper h on obj: it refuses the handler's own argument,
// applies the options, and collects the objects to change, with the Nested
// structures when that option fits h.
func start(h helper, obj any, opts []Option) (options, []target, error) {
	if err := refuseHandled(obj); err != nil {
		return options{}, nil, err
	}
	o, err := configure(h, opts)
	if err != nil {
		return o, nil, err
	}
	ts, err := collect(obj, o.nested)
	return o, ts, err
}

// Forced overwrites what the objects already have: labels with the same
// keys, the name, the namespace. It fits Adopt, Label, HarmonizeNaming and
// AdjustNamespace.
func Forced() Option {
	return Option{"Forced()", forAdopt | forLabel | forNaming | forNamespace, func(o *options) { o.forced = true }}
}

// Strict names the objects exactly as the owner instead of by its name
// plus a random suffix. It fits Adopt and HarmonizeNaming.
func Strict() Option {
	return Option{"Strict()", forAdopt | forNaming, func(o *options) { o.strict = true }}
}

// Nested also labels the nested structures at these dotted paths, such as
// "spec.template" of a Deployment or Job; those absent are skipped, not
// created. It fits Adopt and Label.
func Nested(paths ...string) Option {
	return Option{"Nested()", forAdopt | forLabel, func(o *options) { o.nested = append(o.nested, paths...) }}
}

// Controller sets the owner reference's controller flag (default true). It
// fits AppendOwnerReference and OwnerReference.
func Controller(v bool) Option {
	return Option{"Controller()", forOwnerRef, func(o *options) { o.controller = v }}
}

// BlockOwnerDeletion sets the owner reference's blockOwnerDeletion flag
// (default true). It fits AppendOwnerReference and OwnerReference.
func BlockOwnerDeletion(v bool) Option {
	return Option{"BlockOwnerDeletion()", forOwnerRef, func(o *options) { o.block = v }}
}

// OwnerReference builds the reference to owner that its children carry
// (Kopf's build_owner_reference). The API needs all four identity fields,
// so a missing one is an error here rather than a rejected child later.
func OwnerReference(owner any, opts ...Option) (metav1.OwnerReference, error) {
	o, err := configure(forOwnerRef, opts)
	if err != nil {
		return metav1.OwnerReference{}, err
	}
	id, err := ownerIdentity(owner)
	if err != nil {
		return metav1.OwnerReference{}, fmt.Errorf("owner: %w", err)
	}
	return ownerRef(id, o)
}

func ownerRef(id objects.Identity, o options) (metav1.OwnerReference, error) {
	var missing []error
	for _, f := range []struct{ name, value string }{
		{"apiVersion", id.APIVersion}, {"kind", id.Kind}, {"metadata.name", id.Name}, {"metadata.uid", id.UID},
	} {
		if f.value == "" {
			missing = append(missing, fmt.Errorf("the owner has no %s", f.name))
		}
	}
	if len(missing) > 0 {
		return metav1.OwnerReference{}, fmt.Errorf("cannot refer to the owner (it must exist in the cluster: pass the object a handler got, or one read from the API): %w", errors.Join(missing...))
	}
	return metav1.OwnerReference{
		APIVersion: id.APIVersion, Kind: id.Kind, Name: id.Name, UID: types.UID(id.UID),
		Controller: &o.controller, BlockOwnerDeletion: &o.block,
	}, nil
}

// AppendOwnerReference makes owner an owner of obj (each of them, for a
// slice), unless a reference to the owner's uid is already there.
func AppendOwnerReference(obj, owner any, opts ...Option) error {
	if err := refuseHandled(obj); err != nil {
		return err
	}
	ref, err := OwnerReference(owner, opts...)
	if err != nil {
		return err
	}
	ts, err := collect(obj, nil)
	if err != nil {
		return err
	}
	return appendRef(ts, ref)
}

func appendRef(ts []target, ref metav1.OwnerReference) error {
	for _, t := range ts {
		if t.Obj != nil {
			refs := t.Obj.GetOwnerReferences()
			if !hasUID(refs, ref.UID) {
				own := ref // each child gets flags of its own, not shared pointers
				controller, block := *ref.Controller, *ref.BlockOwnerDeletion
				own.Controller, own.BlockOwnerDeletion = &controller, &block
				t.Obj.SetOwnerReferences(append(refs, own))
			}
			continue
		}
		md := t.meta()
		refs, err := refList(md)
		if err != nil {
			return err
		}
		if refs.find(string(ref.UID)) < 0 {
			refs.items = append(refs.items, map[string]any{
				"apiVersion": ref.APIVersion, "kind": ref.Kind, "name": ref.Name, "uid": string(ref.UID),
				"controller": *ref.Controller, "blockOwnerDeletion": *ref.BlockOwnerDeletion,
			})
			md["ownerReferences"] = refs.items
		}
	}
	return nil
}

// RemoveOwnerReference removes every reference to owner's uid from obj
// (each of them, for a slice).
func RemoveOwnerReference(obj, owner any) error {
	if err := refuseHandled(obj); err != nil {
		return err
	}
	id, err := ownerIdentity(owner)
	if err != nil {
		return fmt.Errorf("owner: %w", err)
	}
	if id.UID == "" {
		return fmt.Errorf("cannot remove references to an owner without metadata.uid: references are matched by uid")
	}
	ts, err := collect(obj, nil)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.Obj != nil {
			refs := t.Obj.GetOwnerReferences()
			if hasUID(refs, types.UID(id.UID)) {
				kept := make([]metav1.OwnerReference, 0, len(refs))
				for _, r := range refs {
					if r.UID != types.UID(id.UID) {
						kept = append(kept, r)
					}
				}
				t.Obj.SetOwnerReferences(kept)
			}
			continue
		}
		md, _ := t.M["metadata"].(map[string]any)
		if md == nil {
			continue
		}
		refs, err := refList(md)
		if err != nil {
			return err
		}
		if refs.find(id.UID) < 0 {
			continue
		}
		kept := make([]any, 0, len(refs.items))
		for _, r := range refs.items {
			if m, _ := r.(map[string]any); m == nil || m["uid"] != id.UID {
				kept = append(kept, r)
			}
		}
		md["ownerReferences"] = kept
	}
	return nil
}

func hasUID(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid {
			return true
		}
	}
	return false
}

// refs is a body's ownerReferences as a []any, whatever slice type a
// hand-built body used.
type refs struct{ items []any }

func refList(md map[string]any) (refs, error) {
	switch l := md["ownerReferences"].(type) {
	case nil:
		return refs{}, nil
	case []any:
		return refs{l}, nil
	case []map[string]any:
		items := make([]any, len(l))
		for i, m := range l {
			items[i] = m
		}
		return refs{items}, nil
	default:
		return refs{}, fmt.Errorf("metadata.ownerReferences is a %T, not a list", l)
	}
}

func (r refs) find(uid string) int {
	for i, x := range r.items {
		if m, ok := x.(map[string]any); ok && m["uid"] == uid {
			return i
		}
	}
	return -1
}

// Label puts labels on obj (each of them, for a slice) and on the nested
// structures given with Nested, keeping the values of keys already there
// unless Forced.
func Label(obj any, labels map[string]string, opts ...Option) error {
	o, ts, err := start(forLabel, obj, opts)
	if err != nil {
		return err
	}
	return label(ts, labels, o.forced)
}

func label(ts []target, labels map[string]string, forced bool) error {
	if len(labels) == 0 {
		return nil
	}
	for _, t := range ts {
		if t.Obj != nil {
			ls := t.Obj.GetLabels()
			if ls == nil {
				ls = make(map[string]string, len(labels))
			}
			for k, v := range labels {
				if _, ok := ls[k]; forced || !ok {
					ls[k] = v
				}
			}
			t.Obj.SetLabels(ls)
			continue
		}
		md := t.meta()
		switch ls := md["labels"].(type) {
		case nil:
			m := make(map[string]any, len(labels))
			for k, v := range labels {
				m[k] = v
			}
			md["labels"] = m
		case map[string]any:
			for k, v := range labels {
				if _, ok := ls[k]; forced || !ok {
					ls[k] = v
				}
			}
		case map[string]string: // a hand-built body
			for k, v := range labels {
				if _, ok := ls[k]; forced || !ok {
					ls[k] = v
				}
			}
		default:
			return fmt.Errorf("metadata.labels is a %T, not a map", ls)
		}
	}
	return nil
}

// HarmonizeNaming names obj (each of them, for a slice) after name, if it
// has neither a name nor a generateName, or if Forced: by default with
// generateName "<name>-", so that the API server adds a random suffix; with
// Strict, exactly name.
func HarmonizeNaming(obj any, name string, opts ...Option) error {
	if name == "" {
		return fmt.Errorf("cannot name objects after an empty name: pass the name explicitly")
	}
	o, ts, err := start(forNaming, obj, opts)
	if err != nil {
		return err
	}
	harmonize(ts, name, o.forced, o.strict)
	return nil
}

func harmonize(ts []target, name string, forced, strict bool) {
	for _, t := range ts {
		if t.Obj != nil {
			if !forced && (t.Obj.GetName() != "" || t.Obj.GetGenerateName() != "") {
				continue
			}
			if strict {
				t.Obj.SetName(name)
				t.Obj.SetGenerateName("")
			} else {
				t.Obj.SetGenerateName(name + "-")
				t.Obj.SetName("")
			}
			continue
		}
		md, _ := t.M["metadata"].(map[string]any)
		_, hasName := md["name"]
		_, hasGenerate := md["generateName"]
		if !forced && (hasName || hasGenerate) {
			continue
		}
		md = t.meta()
		if strict {
			md["name"] = name
			delete(md, "generateName")
		} else {
			md["generateName"] = name + "-"
			delete(md, "name")
		}
	}
}

// AdjustNamespace puts obj (each of them, for a slice) into namespace,
// unless it has a namespace already and is not Forced. An empty namespace
// (a cluster-scoped owner's) leaves the objects alone, unless Forced, which
// clears their namespace.
func AdjustNamespace(obj any, namespace string, opts ...Option) error {
	o, ts, err := start(forNamespace, obj, opts)
	if err != nil {
		return err
	}
	adjust(ts, namespace, o.forced)
	return nil
}

func adjust(ts []target, namespace string, forced bool) {
	for _, t := range ts {
		if t.Obj != nil {
			if forced || t.Obj.GetNamespace() == "" {
				t.Obj.SetNamespace(namespace)
			}
			continue
		}
		md, _ := t.M["metadata"].(map[string]any)
		if !forced && md["namespace"] != nil {
			continue
		}
		switch {
		case namespace != "":
			t.meta()["namespace"] = namespace
		case md != nil:
			delete(md, "namespace")
		}
	}
}

// Adopt makes obj (each of them, for a slice) a child of owner, as Kopf's
// adopt does: an owner reference to it (controller, blocking its deletion),
// a name after it (HarmonizeNaming), its namespace (AdjustNamespace) and its
// labels (Label, also on the Nested structures). Nothing is changed unless
// all of it can be done.
func Adopt(obj, owner any, opts ...Option) error {
	o, withNested, err := start(forAdopt, obj, opts)
	if err != nil {
		return err
	}
	id, err := ownerIdentity(owner)
	if err != nil {
		return fmt.Errorf("owner: %w", err)
	}
	ref, err := ownerRef(id, o)
	if err != nil {
		return err
	}
	ts, err := collect(obj, nil)
	if err != nil {
		return err
	}
	if err := checkLists(withNested); err != nil {
		return err
	}
	if err := appendRef(ts, ref); err != nil {
		return err
	}
	harmonize(ts, id.Name, o.forced, o.strict)
	adjust(ts, id.Namespace, o.forced)
	return label(withNested, id.Labels, o.forced)
}

// checkLists finds the malformed bodies before anything changes, so that
// Adopt changes all or nothing.
func checkLists(ts []target) error {
	for _, t := range ts {
		if t.M == nil {
			continue
		}
		md, _ := t.M["metadata"].(map[string]any)
		if _, err := refList(md); err != nil {
			return err
		}
		switch md["labels"].(type) {
		case nil, map[string]any, map[string]string:
		default:
			return fmt.Errorf("metadata.labels is a %T, not a map", md["labels"])
		}
	}
	return nil
}
