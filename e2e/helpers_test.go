//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/cluster"
	"github.com/kopfgo/kopfgo/e2e/runner"
)

var kexGVR = schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfexamples"}

const (
	waitShort = 30 * time.Second
	waitLong  = 90 * time.Second
)

var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

// kopfgoCLI builds cmd/kopfgo once per test binary.
func kopfgoCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kopfgo-cli-")
		if err != nil {
			cliErr = err
			return
		}
		cliPath = filepath.Join(dir, "kopfgo")
		out, err := exec.Command("go", "build", "-o", cliPath, filepath.Join(repoRoot, "cmd", "kopfgo")).CombinedOutput()
		if err != nil {
			cliErr = fmt.Errorf("go build ./cmd/kopfgo: %v\n%s", err, out)
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cliPath
}

// runOperator starts `kopfgo run PKG -n NS` with plain logs and stops it
// (SIGTERM) when the test ends.
func runOperator(t *testing.T, pkg, ns string, extra ...string) *runner.Process {
	t.Helper()
	args := append([]string{"run", pkg, "-n", ns, "--standalone", "--verbose", "--log-format=plain"}, extra...)
	var echo *os.File
	if os.Getenv("KOPFGO_E2E_ECHO") == "1" {
		echo = os.Stderr
	}
	opts := runner.Options{Dir: repoRoot}
	if echo != nil {
		opts.Echo = echo
	}
	return startProcess(t, kopfgoCLI(t), args, opts)
}

// startProcess starts an operator process and stops it (SIGTERM) when the
// test ends, logging its output if the test failed.
func startProcess(t *testing.T, bin string, args []string, opts runner.Options) *runner.Process {
	t.Helper()
	p, err := runner.Start(bin, args, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-p.Done():
		default:
			if err := p.Stop(30 * time.Second); err != nil {
				t.Errorf("stopping the operator: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("operator log:\n%s", p.Log())
		}
	})
	return p
}

func dyn(t *testing.T) dynamic.Interface {
	t.Helper()
	d, err := dynamic.NewForConfig(cluster.Shared(t).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func kube(t *testing.T) kubernetes.Interface {
	t.Helper()
	k, err := kubernetes.NewForConfig(cluster.Shared(t).RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var nsCounter atomic.Int64

// namespace creates a namespace of the test's own. Namespaces are not
// deleted: the local cluster has no namespace controller to finalize them,
// and the whole cluster goes at the end of the run.
func namespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("e2e-%s-%d", strings.ToLower(sanitize(t.Name())), nsCounter.Add(1))
	if len(name) > 60 {
		name = fmt.Sprintf("e2e-%d-%d", time.Now().UnixNano()%1e9, nsCounter.Add(1))
	}
	_, err := kube(t).CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteRune('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// objYAML is examples/obj.yaml, the demo object.
func objYAML(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "examples", "obj.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func createKex(t *testing.T, ns string, obj map[string]any) *unstructured.Unstructured {
	t.Helper()
	u, err := dyn(t).Resource(kexGVR).Namespace(ns).Create(context.Background(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func getKex(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := dyn(t).Resource(kexGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func patchKex(t *testing.T, ns, name, merge string, subresources ...string) {
	t.Helper()
	_, err := dyn(t).Resource(kexGVR).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(merge), metav1.PatchOptions{}, subresources...)
	if err != nil {
		t.Fatal(err)
	}
}

func deleteKex(t *testing.T, ns, name string) {
	t.Helper()
	if err := dyn(t).Resource(kexGVR).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitGone(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, waitShort, "the object to be gone", func() (bool, error) {
		_, err := dyn(t).Resource(kexGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
}

func waitLog(t *testing.T, p *runner.Process, substr string, n int) {
	t.Helper()
	if err := p.WaitFor(context.Background(), substr, n, waitLong); err != nil {
		t.Fatal(err)
	}
}

// assertCount checks that exactly n log lines contain substr.
func assertCount(t *testing.T, p *runner.Process, substr string, n int) {
	t.Helper()
	if got := p.Count(substr); got != n {
		t.Errorf("%d log lines contain %q, want %d", got, substr, n)
	}
}

// caughtUp proves that an operator has handled every change of an object
// made so far, for the checks that something did NOT happen: an event
// handler of the operator notes the markers patched into the objects'
// status. The operator handles an object's events one at a time, in order,
// each pass to its end (its patches included) before the next; a status
// change is no change of the object to its handlers. So once the operator
// has seen a marker patched after it had seen an earlier one, the pass that
// saw the earlier one, and every pass before it, is over. Two markers are
// needed because a pass may merge several events and run the event handlers
// before it handles the change.
type caughtUp struct {
	mu   sync.Mutex
	seen map[string]int // namespace/name → the highest marker seen
}

const (
	caughtUpID     = "e2e_caught_up" // the event handler's id, in its log lines
	caughtUpMarker = "e2eCaughtUp"   // the status field of the markers
)

var caughtUpSeq atomic.Int64

// register adds the marker-noting event handler to op.
func (c *caughtUp) register(op *kopfgo.Operator) {
	op.On.Event("kopfexamples", func(ctx context.Context, e *kopfgo.WatchEvent) (any, error) {
		n, err := strconv.Atoi(fmt.Sprint(e.Status[caughtUpMarker]))
		if err != nil {
			return nil, nil // no marker yet
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.seen == nil {
			c.seen = map[string]int{}
		}
		key := e.Namespace + "/" + e.Name
		c.seen[key] = max(c.seen[key], n)
		return nil, nil
	}, kopfgo.ID(caughtUpID))
}

// wait returns once the operator has handled every change of the object
// made before the call.
func (c *caughtUp) wait(t *testing.T, ns, name string) {
	t.Helper()
	c.waitIn(t, dyn(t), ns, name)
}

// waitIn is wait on a cluster of the test's own.
func (c *caughtUp) waitIn(t *testing.T, d dynamic.Interface, ns, name string) {
	t.Helper()
	for range 2 {
		n := int(caughtUpSeq.Add(1))
		marker := fmt.Sprintf(`{"status":{%q:"%d"}}`, caughtUpMarker, n)
		if _, err := d.Resource(kexGVR).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, []byte(marker), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
		eventually(t, waitShort, fmt.Sprintf("the operator to see marker %d of %s/%s", n, ns, name), func() (bool, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.seen[ns+"/"+name] >= n, nil
		})
	}
}

// reallyDeleted is Kopf's line for an object's DELETED event: once it is
// logged, the operator is done with the object for good.
func reallyDeleted(ns, name string) string {
	return "[" + ns + "/" + name + "] Deleted, really deleted, and we are notified."
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(b.String())
}

// waitKex waits until the object satisfies cond, and returns it.
func waitKex(t *testing.T, ns, name, what string, cond func(u *unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	var u *unstructured.Unstructured
	eventually(t, waitShort, what, func() (bool, error) {
		var err error
		u, err = dyn(t).Resource(kexGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && cond(u), err
	})
	return u
}

// handled reports whether the object has a diff-base and no progress left:
// the state after a finished handling cycle.
func handled(u *unstructured.Unstructured) bool {
	ann := u.GetAnnotations()
	if _, ok := ann["kopf.zalando.org/last-handled-configuration"]; !ok {
		return false
	}
	for k := range ann {
		if strings.HasPrefix(k, "kopf.zalando.org/") && k != "kopf.zalando.org/last-handled-configuration" {
			return false
		}
	}
	return true
}

// crdYAML is a CustomResourceDefinition of one served version v1 that keeps
// any fields, for tests of resources of their own.
func crdYAML(group, kind, plural string) string {
	return fmt.Sprintf(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[3]s.%[1]s}
spec:
  group: %[1]s
  scope: Namespaced
  names: {kind: %[2]s, plural: %[3]s, singular: %[4]s}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`, group, kind, plural, strings.ToLower(kind))
}
