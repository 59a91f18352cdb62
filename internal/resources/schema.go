package resources

// SchemaOf returns the openAPIV3Schema of a served version of a
// CustomResourceDefinition (its body as a JSON map), or nil when the CRD
// has none for that version.
func SchemaOf(crd map[string]any, version string) map[string]any {
	spec, _ := crd["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	for _, v := range versions {
		v, _ := v.(map[string]any)
		if name, _ := v["name"].(string); name != version {
			continue
		}
		sch, _ := v["schema"].(map[string]any)
		out, _ := sch["openAPIV3Schema"].(map[string]any)
		return out
	}
	return nil
}

// FieldInSchema reports whether a field path (["spec", "replicas"]) can
// name something in objects of an openAPIV3Schema: the API server prunes
// fields the schema does not declare, so a path outside it never has a
// value and a handler on it never runs. Below
// x-kubernetes-preserve-unknown-fields anything goes, additionalProperties
// accepts any key, and paths into lists or through the metadata of an
// object or embedded resource (which the API server's own schema governs)
// are not judged. When the path names nothing,
// suggest is the path with its first unknown step replaced by the nearest
// declared sibling, if one is near enough to be a typo.
func FieldInSchema(schema map[string]any, path []string) (known bool, suggest []string) {
	node := schema
	for i, step := range path {
		if node == nil || node["x-kubernetes-preserve-unknown-fields"] == true {
			return true, nil
		}
		if (i == 0 || node["x-kubernetes-embedded-resource"] == true) && (step == "metadata" || step == "apiVersion" || step == "kind") {
			return true, nil
		}
		if _, isList := node["items"]; isList || node["type"] == "array" {
			return true, nil
		}
		props, _ := node["properties"].(map[string]any)
		if p, ok := props[step]; ok {
			node, _ = p.(map[string]any)
			if node == nil {
				return true, nil
			}
			continue
		}
		switch ap := node["additionalProperties"].(type) {
		case map[string]any:
			node = ap
			continue
		case bool:
			if ap {
				return true, nil
			}
		}
		if near, ok := closest(step, sortedKeys(props)); ok {
			suggest = append(append(append([]string(nil), path[:i]...), near), path[i+1:]...)
		}
		return false, suggest
	}
	return true, nil
}
