// Package hierarchies holds Kopf's helpers for parent-child hierarchies
// (kopf/_kits/hierarchies.py; compat: hierarchies): owner references, labels,
// naming and namespaces of the children an operator creates. They change
// objects in memory only and never call the API; the caller creates the
// children afterwards.
//
// It exists so that the same rules serve every form a Go operator holds
// objects in: bodies as maps (map[string]any, *unstructured.Unstructured),
// client-go typed objects (anything with metav1.Object, such as *corev1.Pod,
// and nested templates such as a Deployment's spec.template), and slices of
// them. It also tells the identity of an object (apiVersion, kind, name,
// uid, namespace, labels) for owner references and for events, including
// the apiVersion and kind of client-go typed objects, whose TypeMeta
// client-go leaves empty.
package hierarchies
