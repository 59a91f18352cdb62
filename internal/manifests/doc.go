// Package manifests writes everything a cluster needs to run an operator,
// from what the operator registered: what `kopfgo manifests` prints.
//
// The RBAC comes from package rbac (computed from the handlers); around it
// go the Namespace, the ServiceAccount, the Deployment of the image with
// the operator's own flags (the probes on its liveness endpoint, metrics,
// peering or leader election or sharding as chosen), a Service for metrics
// and one for admission webhooks, a PodDisruptionBudget when there are
// several replicas, a ServiceMonitor on request, and Kopf's peering CRDs
// when the operator peers. Objects are typed (k8s.io/api) and marshalled,
// so a field's name or shape cannot be misspelt; the CRDs and the
// ServiceMonitor, whose Go types live in modules kopfgo does not depend on,
// are plain maps.
//
// Order matters to a single `kubectl apply`: kubectl maps every object's
// kind before creating any, so objects of a CRD applied in the same call
// fail. CRDs come first and the peering objects, which need their CRDs
// established, are written separately (WriteDir puts them in a directory
// of their own, applied after the CRDs'); everything else is ordered so
// that namespaces precede what is in them.
package manifests
