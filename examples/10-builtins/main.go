// Package builtins handles a built-in resource, pods: every pod may live for
// 30 seconds after the operator first sees it (created, or found at startup),
// then the operator deletes it. Chaos engineering, for fun. Run:
//
//	kopfgo run ./examples/10-builtins -n some-namespace
package builtins

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kopfgo/kopfgo"
)

func Register(r kopfgo.Registrar) {
	r.Resume("v1/pods", podInSight, kopfgo.ID("pod_in_sight"))
	r.Create("v1/pods", podInSight, kopfgo.ID("pod_in_sight"))
	r.Delete("v1/pods", podDeleted, kopfgo.ID("pod_deleted"))
}

// timeout is how long a pod may live: 30s, or POD_TTL (a Go duration).
var timeout = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("POD_TTL")); err == nil && d > 0 {
		return d
	}
	return 30 * time.Second
}()

// killers are the pending pod killings, by pod uid.
var (
	mu      sync.Mutex
	killers = map[string]*time.Timer{}
)

func podInSight(ctx context.Context, c *kopfgo.Change) (any, error) {
	if strings.HasPrefix(c.Namespace, "kube-") {
		return nil, nil // never kill the cluster itself
	}
	cfg, uid, ns, name, log := kopfgo.RESTConfig(ctx), c.UID, c.Namespace, c.Name, c.Logger
	log.Info(fmt.Sprintf("=== Pod killing happens in %s.", timeout))
	mu.Lock()
	defer mu.Unlock()
	if old := killers[uid]; old != nil {
		old.Stop()
	}
	killers[uid] = time.AfterFunc(timeout, func() { podKiller(cfg, uid, ns, name, log) })
	return nil, nil
}

func podDeleted(ctx context.Context, c *kopfgo.Change) (any, error) {
	mu.Lock()
	killer := killers[c.UID]
	delete(killers, c.UID)
	mu.Unlock()
	if killer != nil && killer.Stop() {
		c.Logger.Info("=== Pod killing is cancelled!")
	}
	return nil, nil
}

func podKiller(cfg *rest.Config, uid, namespace, name string, log *slog.Logger) {
	mu.Lock()
	delete(killers, uid)
	mu.Unlock()
	log.Info("=== Pod killing happens NOW!")
	api, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Error(fmt.Sprintf("Cannot kill the pod: %v", err))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := api.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		log.Error(fmt.Sprintf("Cannot kill the pod: %v", err))
	}
}
