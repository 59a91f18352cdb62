// Package dicts reads and writes dotted field paths in the unstructured
// map[string]any trees that Kubernetes objects decode to.
//
// Kopf addresses fields as "spec.field" or as tuples of keys; kopfgo keeps the
// tuple form ([]string) internally so that keys containing dots (annotation
// keys, for instance) stay addressable, and parses the dotted form only at the
// registration boundary.
//
// Equal compares such trees as the diff-base does, numbers by value
// whatever their Go type; it lives here, below diffbase, because the
// engine compares essences too and users never need it.
package dicts
