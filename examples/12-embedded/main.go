// Command embedded runs operators inside a program that does other work:
// the program starts them, waits until they are ready, does its own
// activity (here: creating and deleting the example objects), and stops
// them at the end; two operators run side by side in one process. Run:
//
//	go run ./examples/12-embedded -n default
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kopfgo/kopfgo"
)

func createFn(ctx context.Context, c *kopfgo.Change) (any, error) {
	tpl, _ := kopfgo.MemoValue[string](c.Memo, "create_tpl")
	fmt.Println(strings.ReplaceAll(tpl, "{name}", c.Name))
	return nil, nil
}

func deleteFn(ctx context.Context, c *kopfgo.Change) (any, error) {
	tpl, _ := kopfgo.MemoValue[string](c.Memo, "delete_tpl")
	fmt.Println(strings.ReplaceAll(tpl, "{name}", c.Name))
	return nil, nil
}

// seenFn is the second operator's: it watches the same objects and keeps
// nothing on them (an event handler), so both can serve them at once.
func seenFn(ctx context.Context, e *kopfgo.WatchEvent) (any, error) {
	if e.Type != "" {
		fmt.Printf("The observer has seen %s %s.\n", e.Type, e.Name)
	}
	return nil, nil
}

var kexGVR = schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfexamples"}

func main() {
	ns := flag.String("n", "default", "the namespace to work in")
	steps := flag.Int("steps", 3, "the steps of the main app's activity")
	flag.Parse()
	if err := run(*ns, *steps); err != nil {
		log.Fatal(err)
	}
}

func run(ns string, steps int) error {
	fmt.Println("Starting the main app.")
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), nil).ClientConfig()
	if err != nil {
		return err
	}
	clients, err := kopfgo.NewClients(cfg) // the app's own clients
	if err != nil {
		return err
	}

	// The operators: one handles the objects (its memo carries Kopf's
	// templates) and logs in Kopf's format; the other observes them.
	memo := &kopfgo.Memo{}
	memo.Store("create_tpl", "Hello, {name}!")
	memo.Store("delete_tpl", "Good bye, {name}!")
	handler := kopfgo.New(kopfgo.Options{RESTConfig: cfg, Namespaces: []string{ns}, Memo: memo})
	handler.On.Create("kopfexamples", createFn)
	handler.On.Delete("kopfexamples", deleteFn)
	// Two operators on the same objects need their own finalizers, as two
	// Kopf operators do: each removes its finalizer where it has no delete
	// handlers, and the same name would be added and removed in turn.
	observerSettings := kopfgo.Settings{}
	observerSettings.Persistence.Finalizer = "observer.kopf.dev/finalizer"
	observer := kopfgo.New(kopfgo.Options{RESTConfig: cfg, Namespaces: []string{ns}, Settings: observerSettings,
		Logger: slog.New(slog.DiscardHandler)})
	observer.On.Event("kopfexamples", seenFn)

	ctx, stop := context.WithCancel(context.Background()) // Kopf's stop_flag
	defer stop()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	exited := make(chan struct{}, 2)
	for i, op := range []*kopfgo.Operator{handler, observer} {
		wg.Go(func() {
			errs[i] = kopfgo.RunWithArgs(ctx, op, os.Stderr, "--verbose")
			exited <- struct{}{}
		})
	}
	// Kopf's ready_flag: wait until both have listed their objects.
	if err := waitReady(exited, handler, observer); err != nil {
		stop()
		wg.Wait()
		return errors.Join(append(errs, err)...)
	}

	// The operators are active: run the app's activity.
	kexes := clients.Dynamic.Resource(kexGVR).Namespace(ns)
	for step := range steps {
		fmt.Printf("Do the main app activity here. Step %d/%d.\n", step+1, steps)
		name := fmt.Sprintf("kopf-example-%d", step)
		if err := createObject(ctx, kexes, name); err != nil {
			return err
		}
		time.Sleep(time.Second)
		if err := kexes.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		time.Sleep(time.Second)
	}

	// Ask the operators to stop gracefully.
	fmt.Println("Exiting the main app.")
	stop()
	wg.Wait()
	return errors.Join(errs...)
}

// waitReady waits until every operator is ready, or one has exited.
func waitReady(exited <-chan struct{}, ops ...*kopfgo.Operator) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for _, op := range ops {
		for ready, _ := op.Ready(); !ready; ready, _ = op.Ready() {
			select {
			case <-exited:
				return errors.New("an operator has exited before it was ready")
			case <-tick.C:
			}
		}
	}
	return nil
}

func createObject(ctx context.Context, kexes dynamic.ResourceInterface, name string) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{"name": name},
	}}
	if _, err := kexes.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
