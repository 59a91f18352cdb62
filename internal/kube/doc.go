// Package kube is the only code that talks to the Kubernetes API: it loads
// credentials, discovers resources, lists and watches them for the
// informers, and applies the merge patches that handling cycles produce.
// Everything above it works on plain object trees.
package kube
