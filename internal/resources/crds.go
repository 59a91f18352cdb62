package resources

import (
	"slices"

	"k8s.io/apimachinery/pkg/version"
)

// FromCRD returns the resources a CustomResourceDefinition defines, one per
// served version, as discovery would list them once the API server has
// caught up with the CRD: discovery lags behind CRDs for a moment after the
// API server starts (and after a CRD is created), so the operator compares
// the two to tell a resource that does not exist from one that discovery
// does not show yet. The preferred version is the highest. crd is the CRD's body as a JSON map; anything missing
// or of the wrong type gives no resources.
func FromCRD(crd map[string]any) []Resource {
	spec, _ := crd["spec"].(map[string]any)
	names, _ := spec["names"].(map[string]any)
	group, _ := spec["group"].(string)
	plural, _ := names["plural"].(string)
	if group == "" || plural == "" {
		return nil
	}
	singular, _ := names["singular"].(string)
	kind, _ := names["kind"].(string)
	scope, _ := spec["scope"].(string)
	var out []Resource
	versions, _ := spec["versions"].([]any)
	for _, v := range versions {
		version, _ := v.(map[string]any)
		name, _ := version["name"].(string)
		if served, _ := version["served"].(bool); !served || name == "" {
			continue
		}
		out = append(out, Resource{
			Group: group, Version: name, Plural: plural, Singular: singular, Kind: kind,
			ShortNames: stringList(names["shortNames"]), Categories: stringList(names["categories"]),
			Namespaced: scope != "Cluster",
		})
	}
	// Discovery prefers a group's highest version in Kubernetes' ordering
	// (v2 > v1 > v1beta2); unversioned selectors select the preferred one.
	best := -1
	for i, r := range out {
		if best < 0 || version.CompareKubeAwareVersionStrings(r.Version, out[best].Version) > 0 {
			best = i
		}
	}
	if best >= 0 {
		out[best].Preferred = true
	}
	return out
}

func stringList(v any) []string {
	items, _ := v.([]any)
	var out []string
	for _, it := range items {
		if s, ok := it.(string); ok {
			out = append(out, s)
		}
	}
	return slices.Clip(out)
}
