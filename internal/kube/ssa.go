package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopfgo/kopfgo/internal/resources"
)

// kinds caches the resources of kinds (apiVersion + "/" + kind) for
// ServerSideApply: one discovery request per group-version, not per call.
type kinds struct {
	mu   sync.Mutex
	byGV map[string][]metav1.APIResource
}

// ResourceOf returns the resource of objects of an apiVersion and kind, from
// the discovery of that group-version (one request, then cached).
func (c *Client) ResourceOf(ctx context.Context, apiVersion, kind string) (resources.Resource, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return resources.Resource{}, fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	c.kinds.mu.Lock()
	list, ok := c.kinds.byGV[apiVersion]
	c.kinds.mu.Unlock()
	if !ok {
		var got *metav1.APIResourceList
		err := c.retry(ctx, func() string { return "GET " + c.host + "/apis/" + apiVersion }, func() (err error) {
			got, err = c.Discovery.ServerResourcesForGroupVersion(apiVersion)
			return err
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return resources.Resource{}, fmt.Errorf("cannot discover the resources of %s: %w", apiVersion, err)
		}
		if got != nil {
			list = got.APIResources
		}
		c.kinds.mu.Lock()
		if c.kinds.byGV == nil {
			c.kinds.byGV = map[string][]metav1.APIResource{}
		}
		if err == nil {
			// A group-version not found is not cached: its CRD may come.
			c.kinds.byGV[apiVersion] = list
		}
		c.kinds.mu.Unlock()
	}
	for _, r := range list {
		if r.Kind == kind && !strings.Contains(r.Name, "/") {
			return resources.Resource{Group: gv.Group, Version: gv.Version, Plural: r.Name, Singular: r.SingularName, Kind: r.Kind, Namespaced: r.Namespaced}, nil
		}
	}
	return resources.Resource{}, fmt.Errorf("%w: no kind %s in %s (check the apiVersion and kind, or create the CRD)", resources.ErrUnresolved, kind, apiVersion)
}

// ServerSideApply applies body (an object with apiVersion, kind, name and,
// if namespaced, namespace) as the field manager: the API server merges it
// with what other managers own, and answers a conflict (409, with the
// fields and their managers) when body sets a field another manager owns
// to another value, unless force takes the field over. It returns the
// object as applied.
func (c *Client) ServerSideApply(ctx context.Context, body map[string]any, manager string, force bool) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: body}
	res, err := c.ResourceOf(ctx, u.GetAPIVersion(), u.GetKind())
	if err != nil {
		return nil, err
	}
	if !res.Namespaced {
		// Adopting puts the owner's namespace on every child; a
		// cluster-scoped one must not carry it into the request.
		u.SetNamespace("")
	} else if u.GetNamespace() == "" {
		return nil, fmt.Errorf("%s %s has no namespace: give it one (Adopt gives it the owner's)", res.Kind, u.GetName())
	}
	if u.GetName() == "" {
		return nil, fmt.Errorf("a %s without a name cannot be applied: give it metadata.name (generateName does not work with apply)", res.Kind)
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encoding the %s to apply: %w", res.Kind, err)
	}
	var out *unstructured.Unstructured
	ns, name := u.GetNamespace(), u.GetName()
	err = c.retry(ctx, func() string { return c.describe("PATCH", res, ns, name, "") }, func() (err error) {
		out, err = c.resource(res, ns).Patch(ctx, name, types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: manager, Force: &force})
		return err
	})
	if apierrors.IsConflict(err) {
		return nil, fmt.Errorf("applying %s %s as field manager %q: other managers own fields it sets to other values (leave them out, or force to take them over): %w", res.Kind, objectName(ns, name), manager, err)
	}
	if err != nil {
		return nil, explain(err, "patch", res, ns, name)
	}
	return out, nil
}
