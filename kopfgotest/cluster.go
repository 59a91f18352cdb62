package kopfgotest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kopfgo/kopfgo/e2e/cluster"
)

// Main runs the test binary's tests against one real cluster shared by all
// of them, from TestMain:
//
//	func TestMain(m *testing.M) { kopfgotest.Main(m, nil) }
//
// It builds the servers the first time on a machine (minutes; set
// KOPFGO_KUBE_APISERVER and KOPFGO_ETCD to ready-made binaries to skip
// that, KOPFGO_CACHE to cache elsewhere), starts the cluster, sets
// KUBECONFIG, calls setup (e.g. to apply the operator's CRDs with
// c.ApplyFile), runs the tests, stops the cluster and exits.
func Main(m *testing.M, setup func(c *cluster.Cluster)) { cluster.Main(m, setup) }

// Cluster returns the cluster Main started; it fails the test without one.
func Cluster(t testing.TB) *cluster.Cluster { return cluster.Shared(t) }

// Namespace creates a namespace of the test's own on Main's cluster and
// deletes it when the test ends, so that tests do not see each other's
// objects.
func Namespace(t testing.TB) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(Cluster(t).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	t.Cleanup(func() {
		// No controller-manager finalizes namespaces here: the deletion only
		// marks it; its objects stay, out of other tests' way.
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}
