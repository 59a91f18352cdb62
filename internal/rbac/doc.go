// Package rbac computes the least-privilege RBAC an operator needs from what
// it registered, and writes it as Kubernetes manifests.
//
// kopfgo knows every request an operator makes: for each served resource a
// list and a watch (the informers), merge patches of the object (progress,
// diff-base, finalizers, handlers' patches) and of its status subresource
// (handlers' results) when it has one, a get to re-read an object when the
// watch lags behind the operator's own patches; Events created about the
// objects; customresourcedefinitions listed and watched to serve CRDs that
// appear later. Anything more is a grant too many, anything less a 403. The
// rules here follow what the reactor and the API client actually request,
// so a change there must be mirrored here (the e2e RBAC case fails if not).
//
// The package is pure: the served resources come resolved, and the result is
// rules plus YAML. Resolving the handlers' selectors needs discovery, which
// the root package's RBAC does.
package rbac
