//go:build e2e

package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const testCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: kopftests.test.kopf.dev
spec:
  group: test.kopf.dev
  scope: Namespaced
  names: {plural: kopftests, singular: kopftest, kind: KopfTest, shortNames: [kt]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// The object comes before its CRD on purpose: Apply must reorder them.
const testObject = `
apiVersion: test.kopf.dev/v1
kind: KopfTest
metadata:
  name: example
spec:
  field: %s
  replicas: 3
`

var kopftests = schema.GroupVersionResource{Group: "test.kopf.dev", Version: "v1", Resource: "kopftests"}

var (
	binsOnce sync.Once
	bins     Binaries
	binsErr  error
)

func testBinaries(t *testing.T) *Binaries {
	t.Helper()
	binsOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		bins, binsErr = EnsureBinaries(ctx, t.Logf)
	})
	if binsErr != nil {
		t.Fatal(binsErr)
	}
	return &bins
}

func object(field string) []byte {
	return []byte(strings.ReplaceAll(testObject, "%s", field))
}

func getField(ctx context.Context, t *testing.T, dyn dynamic.Interface) (string, error) {
	t.Helper()
	obj, err := dyn.Resource(kopftests).Namespace("default").Get(ctx, "example", metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	field, _, err := unstructured.NestedString(obj.Object, "spec", "field")
	return field, err
}

func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func portClosed(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	conn, err := net.DialTimeout("tcp", u.Host, time.Second)
	if err != nil {
		return true
	}
	conn.Close()
	return false
}

func TestClusterLifecycle(t *testing.T) {
	ctx := t.Context()
	started := time.Now()
	c, err := Start(ctx, Options{Binaries: testBinaries(t), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	t.Logf("start-up to ready: %s", time.Since(started).Round(10*time.Millisecond))

	// The kubeconfig file works on its own, with TLS verified against the CA.
	kc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if kc.Insecure || len(kc.CAData) == 0 {
		t.Errorf("the kubeconfig skips TLS verification; want the apiserver's CA")
	}
	cs := kubernetes.NewForConfigOrDie(kc)
	if v, err := cs.Discovery().ServerVersion(); err != nil || v.GitVersion != KubeAPIServerVersion {
		t.Errorf("server version %v (%v), want %s", v, err, KubeAPIServerVersion)
	}

	if err := c.Apply(ctx, append(object("one"), []byte("---\n"+testCRD)...)); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(c.RESTConfig())
	if field, err := getField(ctx, t, dyn); err != nil || field != "one" {
		t.Fatalf("spec.field = %q (%v), want one", field, err)
	}
	// Applying again updates.
	if err := c.Apply(ctx, object("two")); err != nil {
		t.Fatal(err)
	}
	if field, err := getField(ctx, t, dyn); err != nil || field != "two" {
		t.Fatalf("after re-apply: spec.field = %q (%v), want two", field, err)
	}

	// Restart only the apiserver: the object lives in etcd and survives.
	oldAPIPid := c.apiserver.cmd.Process.Pid
	etcdPid := c.etcd.cmd.Process.Pid
	stopAt := time.Now()
	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	t.Logf("apiserver stop: %s", time.Since(stopAt).Round(10*time.Millisecond))
	if !processGone(oldAPIPid) || !portClosed(c.APIServerURL) {
		t.Fatal("the apiserver still runs after StopAPIServer")
	}
	if processGone(etcdPid) {
		t.Fatal("StopAPIServer stopped etcd too")
	}
	if _, err := getField(ctx, t, dyn); err == nil {
		t.Fatal("read an object with the apiserver down")
	}
	restartAt := time.Now()
	if err := c.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("apiserver restart to ready: %s", time.Since(restartAt).Round(10*time.Millisecond))
	if err := c.StartAPIServer(ctx); err == nil {
		t.Error("StartAPIServer on a running apiserver did not fail")
	}
	if field, err := getField(ctx, t, dyn); err != nil || field != "two" {
		t.Fatalf("after the apiserver restart: spec.field = %q (%v), want two", field, err)
	}

	// Restart only etcd: the apiserver stays, the data survives.
	oldEtcdPid := etcdPid
	if err := c.StopEtcd(); err != nil {
		t.Fatal(err)
	}
	if !processGone(oldEtcdPid) {
		t.Fatal("etcd still runs after StopEtcd")
	}
	if err := c.StartEtcd(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.StartEtcd(ctx); err == nil {
		t.Error("StartEtcd on a running etcd did not fail")
	}
	etcdPid = c.etcd.cmd.Process.Pid
	eventually(t, func() error {
		field, err := getField(ctx, t, dyn)
		if err == nil && field != "two" {
			err = fmt.Errorf("spec.field = %q, want two", field)
		}
		return err
	})

	if err := c.Delete(ctx, kopftests, "default", "example"); err != nil {
		t.Fatal(err)
	}
	if _, err := getField(ctx, t, dyn); !apierrors.IsNotFound(err) {
		t.Fatalf("after Delete: %v, want NotFound", err)
	}
	if err := c.Delete(ctx, kopftests, "default", "example"); err != nil {
		t.Fatalf("deleting an absent object: %v", err)
	}

	pids := []int{c.apiserver.cmd.Process.Pid, etcdPid}
	stopAt = time.Now()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster stop: %s", time.Since(stopAt).Round(10*time.Millisecond))
	for _, pid := range pids {
		if !processGone(pid) {
			t.Errorf("pid %d still exists after Stop", pid)
		}
	}
	if !portClosed(c.APIServerURL) || !portClosed(c.etcdURL) {
		t.Error("a server port still accepts connections after Stop")
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("the cluster directory %s is still there (%v)", c.Dir, err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}

// A given Dir keeps etcd's data, so a later cluster on new ports sees the
// objects of an earlier one; this is what `cluster -dir` promises.
func TestDirIsReused(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	c, err := Start(ctx, Options{Dir: dir, Binaries: testBinaries(t), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, []byte(testCRD+"---\n"+string(object("kept")))); err != nil {
		_ = c.Stop()
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd")); err != nil {
		t.Fatalf("Stop removed a given directory: %v", err)
	}

	c2, err := Start(ctx, Options{Dir: dir, Binaries: testBinaries(t), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Stop()
	if field, err := getField(ctx, t, dynamic.NewForConfigOrDie(c2.RESTConfig())); err != nil || field != "kept" {
		t.Fatalf("after a restart on the same dir: spec.field = %q (%v), want kept", field, err)
	}
}

func TestApplyErrors(t *testing.T) {
	c := NewForTest(t, Options{Binaries: testBinaries(t)})
	err := c.Apply(t.Context(), []byte("apiVersion: nowhere.example.com/v1\nkind: Ghost\nmetadata: {name: g}\n"))
	if err == nil || !strings.Contains(err.Error(), "is its CRD applied?") {
		t.Errorf("an unknown kind: %v", err)
	}
	err = c.ApplyFile(t.Context(), filepath.Join(t.TempDir(), "missing.yaml"))
	if err == nil {
		t.Error("a missing file applied")
	}
	// generateName objects are created, each time anew.
	cm := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: gen-}\ndata: {a: b}\n")
	for range 2 {
		if err := c.Apply(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
	}
	list, err := kubernetes.NewForConfigOrDie(c.RESTConfig()).CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, item := range list.Items {
		if strings.HasPrefix(item.Name, "gen-") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d generated config maps, want 2", n)
	}
}

// The CLI prints KUBECONFIG=..., serves until SIGTERM, then cleans up.
func TestCommand(t *testing.T) {
	b := testBinaries(t)
	t.Setenv(EnvKubeAPIServer, b.APIServer)
	t.Setenv(EnvEtcd, b.Etcd)
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "cluster")
	build := exec.Command("go", "build", "-o", bin, "../cmd/cluster")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the command: %v\n%s", err, out)
	}

	ready := filepath.Join(tmp, "ready")
	kcOut := filepath.Join(tmp, "kubeconfig")
	cmd := exec.Command(bin, "-ready-file", ready, "-kubeconfig-out", kcOut)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	var kubeconfig string
	select {
	case l := <-line:
		var ok bool
		if kubeconfig, ok = strings.CutPrefix(l, "KUBECONFIG="); !ok {
			t.Fatalf("first stdout line %q, want KUBECONFIG=...", l)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("no KUBECONFIG line; stderr:\n%s", stderr.String())
	}
	if _, err := os.Stat(ready); err != nil {
		t.Errorf("no ready file: %v", err)
	}
	for _, path := range []string{kubeconfig, kcOut} {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
			t.Errorf("using %s: %v", path, err)
		}
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit: %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30 s after SIGTERM; stderr:\n%s", stderr.String())
	}
	if _, err := os.Stat(ready); !os.IsNotExist(err) {
		t.Errorf("the ready file outlived the cluster (%v)", err)
	}
	if _, err := os.Stat(filepath.Dir(kubeconfig)); !os.IsNotExist(err) {
		t.Errorf("the temporary cluster directory outlived the command (%v)", err)
	}
}

// A test binary using Main stops its cluster on SIGINT instead of leaving the
// servers and the directory behind.
func TestMainStopsOnSignal(t *testing.T) {
	b := testBinaries(t)
	t.Setenv(EnvKubeAPIServer, b.APIServer)
	t.Setenv(EnvEtcd, b.Etcd)
	t.Setenv("KOPFGO_MAINTEST_WAIT", "1")
	bin := filepath.Join(t.TempDir(), "maintest.test")
	build := exec.Command("go", "test", "-c", "-tags", "e2e", "-o", bin, "./maintest")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the test binary: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-test.run", "TestWaitForSignal", "-test.v")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	dirLine := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if dir, ok := strings.CutPrefix(sc.Text(), "DIR="); ok {
				dirLine <- dir
			}
		}
		close(dirLine)
	}()
	var dir string
	select {
	case dir = <-dirLine:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the test binary did not report its cluster; stderr:\n%s", stderr.String())
	}
	if dir == "" {
		t.Fatalf("the test binary ended early; stderr:\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 130 {
			t.Errorf("exit %v, want code 130; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30 s after SIGINT; stderr:\n%s", stderr.String())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the cluster directory %s outlived the test binary (%v)", dir, err)
	}
}

// eventually retries f until it succeeds (the apiserver reconnects to a
// restarted etcd on its own schedule), failing after a minute.
func eventually(t *testing.T, f func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
