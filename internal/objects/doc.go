// Package objects reads the objects a Go operator holds in every form it
// holds them: bodies as maps (map[string]any, *unstructured.Unstructured),
// client-go typed objects (anything with metav1.Object, whose TypeMeta
// client-go leaves empty), a handler's own argument, and slices of them.
// It tells their identity (apiVersion, kind, name, uid, namespace, labels)
// and walks them one by one.
//
// It exists so that the same reading serves the hierarchies helpers (owner
// references, labels, naming) and the events kopfgo posts about objects,
// without package kopfgo importing a user kit for it or that kit exporting
// its internals.
package objects
