// Package resources names Kubernetes resources the way Kopf does: a handler
// selects resources with a selector ("kopfexamples", "kopfexamples.kopf.dev",
// "kopf.dev/v1/kopfexamples", a kind or a short name), and the operator
// resolves selectors against the cluster's discovery into the concrete
// resources it watches. Matching is pure; discovery lives in internal/kube.
package resources
