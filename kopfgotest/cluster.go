package kopfgotest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kopfgo/kopfgo/e2e/cluster"
)

// TestCluster is the real cluster of a test binary (etcd and kube-apiserver,
// nothing else: no controller-manager, so nothing garbage-collects owned
// objects or finalizes namespaces, and no scheduler runs pods).
type TestCluster struct {
	c *cluster.Cluster
}

// RESTConfig is a new client configuration of the cluster's admin
// (system:masters).
func (c *TestCluster) RESTConfig() *rest.Config { return c.c.RESTConfig() }

// Kubeconfig is the path of a kubeconfig file for the admin, the one
// KUBECONFIG points to during the tests.
func (c *TestCluster) Kubeconfig() string { return c.c.Kubeconfig }

// Apply creates or updates the objects of a multi-document YAML or JSON
// manifest (CRDs first, then waits until they are established).
func (c *TestCluster) Apply(ctx context.Context, manifest []byte) error {
	return c.c.Apply(ctx, manifest)
}

// ApplyFile is Apply of a file.
func (c *TestCluster) ApplyFile(ctx context.Context, path string) error {
	return c.c.ApplyFile(ctx, path)
}

// Delete deletes one object; a missing one is not an error.
func (c *TestCluster) Delete(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) error {
	return c.c.Delete(ctx, gvr, ns, name)
}

// StopAPIServer stops the kube-apiserver, keeping etcd and the data, to test
// how an operator copes with an outage; StartAPIServer brings it back on the
// same address. The cluster is shared by the binary's tests: a test that
// stops it must not run in parallel with others.
func (c *TestCluster) StopAPIServer() error { return c.c.StopAPIServer() }

// StartAPIServer starts the kube-apiserver again after StopAPIServer and
// waits until it is ready.
func (c *TestCluster) StartAPIServer(ctx context.Context) error { return c.c.StartAPIServer(ctx) }

// mainCalled tells Cluster that Main runs the tests.
var mainCalled atomic.Bool

// Main runs the test binary's tests against one real cluster shared by all
// of them, from TestMain:
//
//	func TestMain(m *testing.M) { kopfgotest.Main(m, nil) }
//
// The cluster starts at the first Cluster, Namespace or Run of a test, not
// before: a run of unit tests only (go test -run Unit) starts nothing. The
// start sets KUBECONFIG and calls setup (e.g. to apply the operator's CRDs
// with c.ApplyFile; a setup that panics fails the tests that need the
// cluster); Main stops the cluster after the tests and exits.
//
// The servers are built once per machine into the kopfgo cache, which takes
// 5 to 11 minutes on 2 cores: run `kopfgo testenv` first (or give go test a
// longer -timeout), as the test that starts the cluster fails at once,
// saying so, when the build cannot fit in the time go test's -timeout
// leaves. KOPFGO_KUBE_APISERVER and KOPFGO_ETCD name ready-made binaries
// instead; KOPFGO_CACHE moves the cache.
func Main(m *testing.M, setup func(c *TestCluster)) {
	mainCalled.Store(true)
	var wrapped func(*cluster.Cluster)
	if setup != nil {
		wrapped = func(c *cluster.Cluster) { setup(&TestCluster{c: c}) }
	}
	cluster.MainLazy(m, wrapped, checkBuildTime)
}

// Cluster returns the cluster of Main, started by the first call; it fails
// the test when TestMain does not call Main or the cluster cannot start.
func Cluster(t testing.TB) *TestCluster {
	t.Helper()
	if !mainCalled.Load() {
		t.Fatal("no test cluster: call kopfgotest.Main(m, setup) from TestMain")
	}
	return &TestCluster{c: cluster.Shared(t)}
}

// startMargin is added to the build time: the cluster's start and the
// test's own run.
const startMargin = 2 * time.Minute

// errNoTimeToBuild is the error of a cluster start refused because the
// servers are missing and building them would not fit in the test's time.
var errNoTimeToBuild = errors.New("no time to build the test servers")

// checkBuildTime refuses to start a build that go test's timeout would
// kill half-way: the test binary would be killed with it, after minutes,
// with a panic that does not say why.
func checkBuildTime(t testing.TB) error {
	_, missing, err := cluster.LookupBinaries()
	if !errors.Is(err, cluster.ErrNotBuilt) {
		return nil // at hand, or an error the start reports better
	}
	deadline, ok := cluster.TestDeadline(t)
	if !ok {
		return nil // -timeout 0
	}
	return buildTimeError(missing, time.Until(deadline))
}

func buildTimeError(missing []cluster.Missing, left time.Duration) error {
	need := startMargin
	var names string
	for i, m := range missing {
		need += m.ColdBuild
		if i > 0 {
			names += " and "
		}
		names += m.Name
	}
	if left >= need {
		return nil
	}
	verb, them := "is", "it"
	if len(missing) > 1 {
		verb, them = "are", "them"
	}
	return fmt.Errorf("%w: %s %s not built; building %s takes up to %s on 2 cores, and go test's -timeout leaves %s. "+
		"Build the servers once, outside the tests, with\n\tkopfgo testenv\n"+
		"or, without the kopfgo command,\n\tgo run github.com/kopfgo/kopfgo/cmd/kopfgo testenv\n"+
		"(or run go test with -timeout %s or more)",
		errNoTimeToBuild, names, verb, them, need.Round(time.Minute), left.Round(time.Second), (need + 5*time.Minute).Round(time.Minute))
}

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
