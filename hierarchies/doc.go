// Package hierarchies holds Kopf's helpers for parent-child hierarchies
// (kopf/_kits/hierarchies.py; compat: hierarchies): owner references, labels,
// naming and namespaces of the children an operator creates. They change
// objects in memory only; the caller creates the children afterwards, or
// lets Apply adopt a copy and apply it in one call (the one helper that
// calls the API, through the operator's client: kopfgo's own, as Kopf
// leaves the API to the user):
//
//	pod := &corev1.Pod{Spec: ...}
//	if err := hierarchies.Adopt(pod, c); err != nil { ... }
//	api.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
//
// The owner is usually the handler's argument c (of any handler kind, typed
// or not); it may also be a body or a typed object that exists in the
// cluster (it needs apiVersion, kind, name and uid). In Kopf the owner may
// be left out inside a handler; in Go it is always passed, so that a helper
// called from a goroutine cannot adopt to the wrong object. The handler's
// own argument is never changed in place: it is the operator's copy, and
// changes to it go through c.Patch.
//
// It is a package of its own, as Kopf keeps it among its user kits, because
// the operator never uses it (the identity of the objects events are about
// is read by internal/objects, which these helpers use too). Its options
// share one type, Option; an option given to a helper it does not fit is
// that helper's error.
//
// It exists so that the same rules serve every form a Go operator holds
// objects in: bodies as maps (map[string]any, *unstructured.Unstructured),
// client-go typed objects (anything with metav1.Object, such as *corev1.Pod,
// and nested templates such as a Deployment's spec.template), and slices of
// them. An owner reference gets the owner's apiVersion and kind even from a
// client-go typed object, whose TypeMeta client-go leaves empty.
package hierarchies
