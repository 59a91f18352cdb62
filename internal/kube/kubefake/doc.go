// Package kubefake gives tests a kube.Client over a fake API: client-go's
// dynamic fake (or anything else that is a dynamic.Interface) served over
// HTTP to the client's own REST clients. The lists, watches and patches of
// a test so take the operator's one path (kube's raw REST client, which
// decodes each response once) rather than a second one through the
// dynamic client that only tests would use; the fake sits at the HTTP
// seam, below everything kube does.
//
// It is in a package of its own, imported by tests only, so that no
// operator's binary carries it.
package kubefake
