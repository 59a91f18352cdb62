// Package kubefake gives tests a fake API server and a kube.Client over
// it: client-go's dynamic fake, its writes numbered with resourceVersions
// and its lists, watches and patches served over HTTP to the client's own
// REST clients. The lists, watches and patches of a test so take the
// operator's one path (kube's raw REST client, which decodes each response
// once) rather than a second one through the dynamic client that only
// tests would use; the fake sits at the HTTP seam, below everything kube
// does.
//
// It answers a watch as an API server does, which client-go's fake does
// not: a watch from a list's resourceVersion is told everything written
// since, from a bounded history of each resource's events, and a watch
// from before that history is answered 410 Expired, after which an
// informer lists again. Tests so need not hold the operator's writes until
// its watches are there.
//
// It is in a package of its own, imported by tests only, so that no
// operator's binary carries it.
package kubefake
