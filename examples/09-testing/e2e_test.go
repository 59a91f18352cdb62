//go:build e2e

package testing09

import (
	"context"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/kopfgotest"
)

// One real cluster for the package's tests, with the example CRD.
func TestMain(m *testing.M) {
	kopfgotest.Main(m, func(c *kopfgotest.TestCluster) {
		if err := c.ApplyFile(context.Background(), "../crd.yaml"); err != nil {
			panic(err)
		}
	})
}

var kexGVR = schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfexamples"}

// Kopf's test_resource_lifecycle: run the operator, create and delete the
// example object, and check that the operator did not die and logged.
func TestResourceLifecycle(t *testing.T) {
	data, err := os.ReadFile("../obj.yaml")
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		t.Fatal(err)
	}
	kexes := dynamic.NewForConfigOrDie(kopfgotest.Cluster(t).RESTConfig()).Resource(kexGVR).Namespace("default")

	// The operator of this package, as `kopfgo run -A --verbose --standalone`
	// runs it: Register on an operator of the test's own.
	op := kopfgo.New(kopfgo.Options{})
	Register(op.On)
	runner := kopfgotest.Run(t, op, "--all-namespaces", "--verbose", "--standalone")
	if _, err := kexes.Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	runner.WaitFor("[default/kopf-example-1] Something was logged here.", 1)
	if err := kexes.Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	runner.WaitFor("[default/kopf-example-1] Deleted, really deleted, and we are notified.", 1)

	// The operator did not die on start, or during the operation.
	if err := runner.Stop(); err != nil {
		t.Fatalf("exit error: %v", err)
	}
	for _, line := range []string{
		"[default/kopf-example-1] Creation is in progress:",
		"[default/kopf-example-1] Something was logged here.",
	} {
		if runner.Count(line) == 0 {
			t.Errorf("no %q in the log", line)
		}
	}
}
