package kopfgo

import (
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopfgo/kopfgo/internal/hierarchies"
)

// Hierarchies: Kopf's helpers for the children an operator creates
// (compat: hierarchies). They change objects in memory only; create the children
// afterwards. The objects (obj) may be bodies (map[string]any,
// *unstructured.Unstructured), client-go typed objects (pointers such as
// *corev1.Pod), or slices of them. The owner is usually the handler's
// argument c; it may also be a body or a typed object that exists in the
// cluster (it needs apiVersion, kind, name and uid).
//
// In Kopf the owner may be left out inside a handler; in Go it is always
// passed, so that a helper called from a goroutine cannot adopt to the
// wrong object.

// The options of the hierarchy helpers; each fits only the helpers listed in
// its doc, and a misfit does not compile.
type (
	AdoptOption     = hierarchies.AdoptOption
	LabelOption     = hierarchies.LabelOption
	NamingOption    = hierarchies.NamingOption
	NamespaceOption = hierarchies.NamespaceOption
	OwnerRefOption  = hierarchies.OwnerRefOption

	// ForcedOption fits Adopt, Label, HarmonizeNaming and AdjustNamespace.
	ForcedOption = hierarchies.ForcedOption
	// StrictOption fits Adopt and HarmonizeNaming.
	StrictOption = hierarchies.StrictOption
	// NestedOption fits Adopt and Label.
	NestedOption = hierarchies.NestedOption
	// ControllerOption fits AppendOwnerReference and OwnerReference.
	ControllerOption = hierarchies.ControllerOption
	// BlockOwnerDeletionOption fits AppendOwnerReference and OwnerReference.
	BlockOwnerDeletionOption = hierarchies.BlockOwnerDeletionOption
)

// Forced overwrites what the objects already have: labels with the same
// keys, the name, the namespace.
func Forced() ForcedOption { return ForcedOption{} }

// Strict names the objects exactly as the owner instead of by its name plus
// a random suffix.
func Strict() StrictOption { return StrictOption{} }

// Nested also labels the nested structures at these dotted paths, such as
// "spec.template" of a Deployment or Job; those absent are skipped, not
// created.
func Nested(paths ...string) NestedOption { return NestedOption(paths) }

// Controller sets the owner reference's controller flag (default true).
func Controller(v bool) ControllerOption { return ControllerOption(v) }

// BlockOwnerDeletion sets the owner reference's blockOwnerDeletion flag
// (default true).
func BlockOwnerDeletion(v bool) BlockOwnerDeletionOption { return BlockOwnerDeletionOption(v) }

// errHandledObject: the handled object is the informer's copy; changing it in
// place would corrupt the operator's view of it.
var errHandledObject = errors.New("the handled object cannot be changed in place: put changes into c.Patch")

// Adopt makes obj a child of owner (Kopf's kopf.adopt; compat:
// hierarchies-adopt): an owner reference to it (controller, blocking the
// owner's deletion), so that Kubernetes deletes the child with its owner; a
// name after it (HarmonizeNaming); its namespace (AdjustNamespace); its labels
// (Label, also on Nested structures). Existing names, namespaces and label
// values are kept unless Forced. Nothing changes unless all of it can be done.
//
//	pod := &corev1.Pod{Spec: ...}
//	if err := kopfgo.Adopt(pod, c); err != nil { ... }
//	api.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
func Adopt(obj, owner any, opts ...AdoptOption) error {
	if isHandlerArg(obj) {
		return errHandledObject
	}
	return hierarchies.Adopt(obj, bodyOf(owner), opts...)
}

// Label puts labels on obj (compat: hierarchies-labels), keeping the values of
// keys already there unless Forced; Nested labels nested structures too
// (compat: hierarchies-labels). Pass c.Labels for the handled object's labels.
func Label(obj any, labels map[string]string, opts ...LabelOption) error {
	if isHandlerArg(obj) {
		return errHandledObject
	}
	return hierarchies.Label(obj, labels, opts...)
}

// AppendOwnerReference makes owner an owner of obj, unless a reference to
// the owner's uid is there already (compat: hierarchies-owner-references).
func AppendOwnerReference(obj, owner any, opts ...OwnerRefOption) error {
	if isHandlerArg(obj) {
		return errHandledObject
	}
	return hierarchies.AppendOwnerReference(obj, bodyOf(owner), opts...)
}

// RemoveOwnerReference removes every reference to owner's uid from obj
// (compat: hierarchies-owner-references).
func RemoveOwnerReference(obj, owner any) error {
	if isHandlerArg(obj) {
		return errHandledObject
	}
	return hierarchies.RemoveOwnerReference(obj, bodyOf(owner))
}

// OwnerReference builds the reference to owner that its children carry (Kopf's
// build_owner_reference; compat: hierarchies-references), for objects the other
// helpers do not cover.
func OwnerReference(owner any, opts ...OwnerRefOption) (metav1.OwnerReference, error) {
	return hierarchies.OwnerReference(bodyOf(owner), opts...)
}

// HarmonizeNaming names obj after name when it has neither a name nor a
// generateName, or when Forced (compat: hierarchies-naming): by default
// generateName "<name>-", so that the API server adds a random suffix; with
// Strict, exactly name. Pass c.Name for the handled object's name.
func HarmonizeNaming(obj any, name string, opts ...NamingOption) error {
	if isHandlerArg(obj) {
		return errHandledObject
	}
	return hierarchies.HarmonizeNaming(obj, name, opts...)
}

// AdjustNamespace puts obj into namespace unless it has one already and is not
// Forced (compat: hierarchies-namespace). Pass c.Namespace for the handled
// object's namespace.
func AdjustNamespace(obj any, namespace string, opts ...NamespaceOption) error {
	if isHandlerArg(obj) {
		return errHandledObject
	}
	return hierarchies.AdjustNamespace(obj, namespace, opts...)
}
