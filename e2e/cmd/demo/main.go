// Command demo shows a kopfgo operator at work on a fresh machine, with
// nothing but Go: it builds and starts a local etcd and kube-apiserver,
// applies the example CRD, runs `kopfgo run ./examples/01-minimal`, creates
// examples/obj.yaml, shows the operator's log and the object's resulting
// status, and cleans everything up. `make demo` runs it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kopfgo/kopfgo/e2e/cluster"
	"github.com/kopfgo/kopfgo/e2e/runner"
)

var kex = schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfexamples"}

func main() {
	example := flag.String("example", "./examples/01-minimal", "the example operator to run")
	flag.Parse()
	if err := run(*example); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) { fmt.Printf("\n=== "+format+"\n", args...) }

func run(example string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "examples", "crd.yaml")); err != nil {
		return fmt.Errorf("run the demo from the kopfgo checkout (make demo): %w", err)
	}

	say("Building (first time: a few minutes) and starting etcd and kube-apiserver")
	logf := func(format string, args ...any) { fmt.Printf("cluster: "+format+"\n", args...) }
	c, err := cluster.Start(ctx, cluster.Options{Logf: logf})
	if err != nil {
		return err
	}
	defer func() {
		say("Stopping the cluster")
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "demo: stopping the cluster: %v\n", err)
		}
	}()

	say("Applying examples/crd.yaml")
	if err := c.ApplyFile(ctx, filepath.Join(root, "examples", "crd.yaml")); err != nil {
		return err
	}

	say("Building kopfgo and running: kopfgo run %s -n default", example)
	bin := filepath.Join(c.Dir, "kopfgo")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/kopfgo").CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/kopfgo: %v\n%s", err, out)
	}
	op, err := runner.Start(bin, []string{"run", example, "-n", "default", "--standalone", "--verbose"}, runner.Options{
		Dir: root, Env: []string{"KUBECONFIG=" + c.Kubeconfig}, Echo: os.Stdout,
	})
	if err != nil {
		return err
	}
	defer func() {
		say("Stopping the operator (SIGTERM)")
		if err := op.Stop(30 * time.Second); err != nil {
			fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		}
	}()
	if err := op.WaitFor(ctx, "Serving", 1, 3*time.Minute); err != nil {
		return err
	}

	say("Creating examples/obj.yaml")
	if err := c.ApplyFile(ctx, filepath.Join(root, "examples", "obj.yaml")); err != nil {
		return err
	}
	if err := op.WaitFor(ctx, "Creation is processed", 1, time.Minute); err != nil {
		return err
	}

	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	// The log line comes before the operator's patch; wait for the result.
	var obj *unstructured.Unstructured
	for deadline := time.Now().Add(time.Minute); ; {
		obj, err = dyn.Resource(kex).Namespace("default").Get(ctx, "kopf-example-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if _, ok := obj.GetAnnotations()["kopf.zalando.org/last-handled-configuration"]; ok {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("the object is not handled a minute after its creation")
		}
		time.Sleep(100 * time.Millisecond)
	}
	status, _ := json.MarshalIndent(obj.Object["status"], "", "  ")
	say("The object's status, as the handler left it:\n%s", status)
	annotations, _ := json.MarshalIndent(obj.GetAnnotations(), "", "  ")
	say("The object's annotations (the last handled state, in Kopf's format):\n%s", annotations)

	say("Deleting the object")
	if err := c.Delete(ctx, kex, "default", "kopf-example-1"); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := dyn.Resource(kex).Namespace("default").Get(ctx, "kopf-example-1", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("the object is still there a minute after its deletion")
		}
		time.Sleep(200 * time.Millisecond)
	}
	say("The object is gone. Done.")
	return nil
}
