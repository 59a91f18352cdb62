//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/internal/testmod"
)

// kitOperator is a user's operator in a module of its own.
const kitOperator = `package kitdemo

import (
	"context"

	"github.com/kopfgo/kopfgo"
)

type KopfExample struct {
	Spec struct {
		Field string ` + "`json:\"field\"`" + `
	} ` + "`json:\"spec\"`" + `
}

type Greeting struct {
	Message string ` + "`json:\"message\"`" + `
}

func Register(op *kopfgo.Operator) {
	kopfgo.OnCreate(op.On, "kopfexamples.kopf.dev", createFn)
}

func createFn(ctx context.Context, c *kopfgo.TypedChange[*KopfExample]) (any, error) {
	c.Patch.Labels()["greeted"] = "yes"
	return Greeting{Message: "hello " + c.Obj.Spec.Field}, nil
}
`

// kitOperatorTest is that user's tests, with the kit: a unit test without
// a cluster, and one that runs the operator on a real cluster.
const kitOperatorTest = `package kitdemo

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/kopfgotest"
)

func TestMain(m *testing.M) {
	kopfgotest.Main(m, func(c *kopfgotest.TestCluster) {
		if err := c.ApplyFile(context.Background(), "crd.yaml"); err != nil {
			panic(err)
		}
	})
}

func body() map[string]any {
	return map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{"name": "kex"},
		"spec":     map[string]any{"field": "world"},
	}
}

func TestCreateUnit(t *testing.T) {
	c := kopfgotest.NewChange(body())
	res, err := kopfgo.Typed(createFn)(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if res.(map[string]any)["message"] != "hello world" {
		t.Errorf("result %v", res)
	}
	if c.Patch.Labels()["greeted"] != "yes" {
		t.Errorf("patch %v", c.Patch.Map())
	}
}

func TestOperator(t *testing.T) {
	ns := kopfgotest.Namespace(t)
	op := kopfgo.New(kopfgo.Options{})
	Register(op)
	r := kopfgotest.Run(t, op, "-n", ns, "--verbose")

	dyn := dynamic.NewForConfigOrDie(kopfgotest.Cluster(t).RESTConfig())
	gvr := schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfexamples"}
	if _, err := dyn.Resource(gvr).Namespace(ns).Create(context.Background(), &unstructured.Unstructured{Object: body()}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.WaitFor("Handler 'createFn' succeeded.", 1)
	kopfgotest.Eventually(t, "the greeting in status", func() (bool, error) {
		u, err := dyn.Resource(gvr).Namespace(ns).Get(context.Background(), "kex", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		msg, _, _ := unstructured.NestedString(u.Object, "status", "createFn", "message")
		return msg == "hello world" && u.GetLabels()["greeted"] == "yes", nil
	})
	if err := r.Stop(); err != nil {
		t.Errorf("exit error: %v", err)
	}
	if r.Count("Handler 'createFn' succeeded.") != 1 {
		t.Errorf("log:\n%s", r.Output())
	}
}
`

// A user's module outside the repository imports kopfgo and its test kit;
// its go test starts a real cluster (Main), runs the operator in process
// (Run) and passes. The harness finds the servers' sources in the package,
// not in a kopfgo checkout.
func TestKitFromAScratchModule(t *testing.T) {
	crd, err := os.ReadFile(filepath.Join(repoRoot, "examples", "crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := testmod.Write(t, repoRoot, "example.com/kitdemo", map[string]string{
		"operator.go":      kitOperator,
		"operator_test.go": kitOperatorTest,
		"crd.yaml":         string(crd),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-v", "./...")
	cmd.Dir = dir
	cmd.Env = append(testmod.Env(), "KUBECONFIG=/nonexistent") // the kit's own cluster, not the suite's
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test in the scratch module: %v\n%s", err, out)
	}
	for _, want := range []string{"--- PASS: TestCreateUnit", "--- PASS: TestOperator"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}
