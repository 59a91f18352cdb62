// Command peer is the controller-runtime contender of the benchmark: a
// controller doing the floor's writes (the diff-base annotation, then the
// result in status) the way controller-runtime users write one: a manager,
// a cached client, a reconciler. It lives in a module of its own so that
// kopfgo's module does not depend on controller-runtime.
package main

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kopfgo/kopfgo/e2e/bench/probe"
)

// workers matches the floor's concurrency; controller-runtime's default of
// one reconciler at a time would measure the API server's latency instead.
const workers = 16

func main() {
	ctx, c, stop, err := probe.Start()
	if err == nil {
		err = run(ctx, c)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c *probe.Contender) error {
	log.SetLogger(crzap.New()) // controller-runtime's own logs, on stderr like the others'
	mgr, err := ctrl.NewManager(c.Config, ctrl.Options{
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{c.Namespace: {}}},
		Metrics: server.Options{BindAddress: "0"},
		Client:  client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(probe.GVK)
	err = ctrl.NewControllerManagedBy(mgr).
		For(obj).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(&reconciler{client: mgr.GetClient(), probe: c.Probe})
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

type reconciler struct {
	client client.Client
	probe  *probe.Probe
}

// Reconcile writes the diff-base annotation first, as the floor does: the
// cache then shows the object handled when the status write's event comes.
func (r *reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(probe.GVK)
	if err := r.client.Get(ctx, req.NamespacedName, u); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	want, err := probe.DiffBase(u.Object["spec"])
	if err != nil {
		return ctrl.Result{}, err
	}
	have, existed := u.GetAnnotations()[probe.DiffBaseAnnotation]
	if have == want {
		return ctrl.Result{}, nil
	}
	r.probe.Call()
	ann, err := probe.AnnotationsPatch(want)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.client.Patch(ctx, u, client.RawPatch(types.MergePatchType, ann)); err != nil {
		return ctrl.Result{}, err
	}
	if existed {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, r.client.Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, probe.StatusPatch()))
}
