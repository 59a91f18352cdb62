// Package conditions keeps the standard status.conditions (the
// metav1.Condition shape) that kopfgo writes on the objects it handles, so
// that kubectl, `kubectl wait --for=condition=Ready` and kstatus-based tools
// (Flux, kpt, cli-utils) can tell a handled object from one whose handlers
// retry or have failed for good. Kopf writes no conditions
// (docs/kopf-compatibility.md, persistence-conditions); docs/conditions.md
// says what each condition means.
//
// It exists apart from the handling cycle because conditions are a list,
// and a merge patch replaces a list whole: changes (the framework's and the
// handlers', patch.Patch.ChangeCondition) wait in the patch until whoever
// sends it merges them into the object's current list (Write). For works
// out the framework's own conditions from the state of a cycle.
//
// Everything here is pure: no I/O, no clock, no logging.
package conditions
