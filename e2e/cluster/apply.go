package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// FieldManager is the server-side-apply field manager of Apply.
const FieldManager = "kopfgo-e2e"

// crdWaitTimeout bounds the wait for an applied CRD to become usable when ctx
// has no earlier deadline; it is normally a second or two.
const crdWaitTimeout = 60 * time.Second

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// Apply creates or updates every object in a YAML (documents separated by
// "---") or JSON manifest, like `kubectl apply --server-side --force-conflicts`.
// Namespaces and CRDs go first; each applied CRD is waited for until it is
// Established and its resource is discoverable, so that the manifest's (or the
// next call's) custom objects can be applied right away. Namespaced objects
// without a namespace go to "default". Objects with only generateName are
// created.
func (c *Cluster) Apply(ctx context.Context, manifest []byte) error {
	objs, err := decodeManifest(manifest)
	if err != nil {
		return err
	}
	sortForApply(objs)
	for _, obj := range objs {
		if err := c.applyOne(ctx, obj); err != nil {
			return fmt.Errorf("applying %s %s: %w", obj.GetKind(), describe(obj), err)
		}
	}
	return nil
}

// ApplyFile applies the manifest in the file at path; see Apply.
func (c *Cluster) ApplyFile(ctx context.Context, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the manifest: %w", err)
	}
	if err := c.Apply(ctx, data); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Delete deletes one object (ns is empty for cluster-scoped resources). An
// object already gone is not an error. It does not wait for finalizers: with an
// operator under test, that is the operator's part to observe.
func (c *Cluster) Delete(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) error {
	dyn, _, err := c.clients()
	if err != nil {
		return err
	}
	err = dyn.Resource(gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s/%s: %w", gvr.String(), ns, name, err)
	}
	return nil
}

func (c *Cluster) applyOne(ctx context.Context, obj *unstructured.Unstructured) error {
	dyn, mapper, err := c.clients()
	if err != nil {
		return err
	}
	gvk := obj.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		// The kind may have appeared since discovery was cached.
		mapper.Reset()
		mapping, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return fmt.Errorf("no resource for kind %q in %q (is its CRD applied?): %w", gvk.Kind, gvk.GroupVersion(), err)
	}

	var ri interface {
		Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
		Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*unstructured.Unstructured, error)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if obj.GetNamespace() == "" {
			obj.SetNamespace(metav1.NamespaceDefault)
		}
		ri = dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
	} else {
		obj.SetNamespace("")
		ri = dyn.Resource(mapping.Resource)
	}

	if obj.GetName() == "" {
		if obj.GetGenerateName() == "" {
			return errors.New("the object has neither a name nor a generateName")
		}
		created, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager})
		if err != nil {
			return err
		}
		obj = created
	} else {
		data, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		force := true
		if _, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &force}); err != nil {
			return err
		}
	}

	if obj.GroupVersionKind().GroupKind() == crdGVK.GroupKind() {
		return c.waitCRD(ctx, obj.GetName())
	}
	return nil
}

// waitCRD waits until the CRD is Established and each served version of its
// resource is known to discovery (the two are not simultaneous), then leaves
// the mapper fresh for the custom objects that follow.
func (c *Cluster) waitCRD(ctx context.Context, name string) error {
	dyn, mapper, err := c.clients()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, crdWaitTimeout)
	defer cancel()
	crds := dyn.Resource(schema.GroupVersionResource{Group: crdGVK.Group, Version: crdGVK.Version, Resource: "customresourcedefinitions"})

	var last error
	for {
		last = func() error {
			crd, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !crdEstablished(crd) {
				return errors.New("not Established yet")
			}
			group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			mapper.Reset()
			for _, v := range versions {
				vm, _ := v.(map[string]any)
				if served, _ := vm["served"].(bool); !served {
					continue
				}
				version, _ := vm["name"].(string)
				if _, err := mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind}, version); err != nil {
					return fmt.Errorf("not discoverable yet: %w", err)
				}
			}
			return nil
		}()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for CRD %s to be usable (last: %v): %w", name, last, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func crdEstablished(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if cm["type"] == "Established" && cm["status"] == "True" {
			return true
		}
	}
	return false
}

// decodeManifest splits a YAML or JSON stream into objects, skipping empty
// documents and expanding `kind: List`.
func decodeManifest(manifest []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("manifest document %d: %w", doc, err)
		}
		if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) || bytes.Equal(t, []byte("{}")) {
			continue
		}
		obj := &unstructured.Unstructured{}
		// UnmarshalJSON keeps integers as int64, as the apimachinery helpers expect.
		if err := obj.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("manifest document %d: %w", doc, err)
		}
		if obj.GetAPIVersion() == "" {
			return nil, fmt.Errorf("manifest document %d (%s): apiVersion is missing", doc, obj.GetKind())
		}
		if !obj.IsList() {
			objs = append(objs, obj)
			continue
		}
		err := obj.EachListItem(func(item runtime.Object) error {
			u, ok := item.(*unstructured.Unstructured)
			if !ok || u.GetKind() == "" || u.GetAPIVersion() == "" {
				return errors.New("a list item lacks apiVersion or kind")
			}
			objs = append(objs, u)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("manifest document %d: %w", doc, err)
		}
	}
}

// sortForApply moves Namespaces, then CRDs, to the front, keeping the order
// otherwise, so that objects can come before their namespace or CRD in a
// manifest, as with kubectl.
func sortForApply(objs []*unstructured.Unstructured) {
	rank := func(o *unstructured.Unstructured) int {
		gk := o.GroupVersionKind().GroupKind()
		switch {
		case gk == schema.GroupKind{Kind: "Namespace"}:
			return 0
		case gk == crdGVK.GroupKind():
			return 1
		default:
			return 2
		}
	}
	sort.SliceStable(objs, func(i, j int) bool { return rank(objs[i]) < rank(objs[j]) })
}

func describe(obj *unstructured.Unstructured) string {
	name := obj.GetName()
	if name == "" {
		name = obj.GetGenerateName() + "*"
	}
	if obj.GetNamespace() != "" {
		return obj.GetNamespace() + "/" + name
	}
	return name
}
