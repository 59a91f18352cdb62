// Package cluster runs a real, throwaway Kubernetes control plane (etcd plus
// kube-apiserver, nothing else) on loopback ports, for end-to-end tests and
// demos of operators.
//
// # Why a real apiserver
//
// An operator's correctness lives in its conversation with the apiserver:
// resource versions and conflicts, merge and JSON patches, the status
// subresource, finalizers holding back deletion, watch bookmarks and
// reconnects, CRD schemas pruning unknown fields, admission of what it writes.
// Fake clients answer all of that the way their authors imagined, so tests
// against them pass while the operator fails on a cluster. kopfgo stores its
// handlers' progress and diff-base on the objects themselves, which makes the
// real semantics of patches and deletions central; its behaviour is therefore
// tested against the real servers.
//
// The servers are built from the Go module proxy by two small modules in
// the package itself (toolsrc: kube-apiserver v1.34.3 from k8s.io/kubernetes,
// etcd v3.6.5), written out under the cache and built there, so
// no foreign binary is downloaded. EnsureBinaries builds them once per machine
// into a cache (a cold kube-apiserver build takes minutes; afterwards a cluster
// is ready in a few seconds). KOPFGO_KUBE_APISERVER and KOPFGO_ETCD can name
// ready-made binaries instead, e.g. those of controller-runtime's envtest.
//
// There is no controller-manager or scheduler: nothing garbage-collects owned
// objects, runs pods or creates service-account tokens. Operators' tests rarely
// need those, and leaving them out keeps start-up fast and behaviour
// deterministic.
//
// # For users' operators too
//
// This package is part of kopfgo's product, not only of its test suite: it is
// to kopfgo what KopfRunner is to Kopf and envtest to controller-runtime, so
// that an operator's authors can test it against a real apiserver without a
// kind or minikube cluster.
//
// One cluster for a whole test binary (start-up is paid once):
//
//	func TestMain(m *testing.M) {
//		cluster.Main(m, func(c *cluster.Cluster) {
//			// e.g. install the operator's CRDs
//			if err := c.ApplyFile(context.Background(), "../crds.yaml"); err != nil {
//				panic(err)
//			}
//		})
//	}
//
//	func TestSomething(t *testing.T) {
//		c := cluster.Shared(t)      // KUBECONFIG also points to it
//		cfg := c.RESTConfig()
//		...
//	}
//
// A cluster of a test's own, for tests that break it (e.g. stop the apiserver
// with StopAPIServer and bring it back with StartAPIServer):
//
//	c := cluster.NewForTest(t, cluster.Options{})
//
// From a shell, `go run ./e2e/cmd/cluster` starts a cluster and prints
// KUBECONFIG=<path> for kubectl or an operator run by hand.
//
// MainLazy starts the shared cluster at the first Shared call instead, so
// that a run of unit tests only starts nothing (kopfgotest.Main uses it).
//
// Servers run in their own process groups with a parent-death signal, so they
// do not outlive a crashed or killed test binary; Main and the command also stop
// them on SIGINT and SIGTERM and remove their temporary directory. So do the
// builds of the servers: a build's process group (go and its compilers) dies
// with the process that started it, and the next build removes what an
// interrupted one left in the cache. `kopfgo testenv` runs EnsureBinaries
// outside any test, with no go test timeout to race.
package cluster
