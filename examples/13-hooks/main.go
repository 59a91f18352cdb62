// Package hooks shows the operator-level activities: startup handlers (one
// retried until it succeeds), a login handler with expiring credentials,
// liveness probes, and a cleanup handler that stops the background tasks the
// operator started for every pod. Run:
//
//	kopfgo run ./examples/13-hooks --liveness=http://127.0.0.1:8080/healthz
package hooks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/kopfgo/kopfgo"
)

// tasks are the background tasks, one per pod, by namespace and name. They
// are the example's own goroutines: the cleanup handler stops them and waits
// for them, so that none outlives the operator. The registry is set up by a
// startup handler, as Kopf's example creates its lock: nothing is watched
// until the startup handlers have succeeded.
var tasks struct {
	sync.Mutex
	stoppers map[string]map[string]context.CancelFunc
	wg       sync.WaitGroup
}

func Register(r kopfgo.Registrar) {
	r.Startup(startupFnSimple, kopfgo.ID("startup_fn_simple"))
	r.Startup(startupFnRetried, kopfgo.ID("startup_fn_retried"))
	r.Cleanup(cleanupFn, kopfgo.ID("cleanup_fn"))
	r.Login(loginFn, kopfgo.ID("login_fn"), kopfgo.Errors(kopfgo.ErrorsPermanent))
	r.Probe(tasksCount, kopfgo.ID("tasks_count"))
	r.Probe(monitoredObjects, kopfgo.ID("monitored_objects"))
	r.Event("pods", podTask, kopfgo.ID("pod_task"))
}

func startupFnSimple(ctx context.Context, a *kopfgo.Activity) error {
	a.Logger.Info("Initialising the task-lock...")
	tasks.Lock()
	defer tasks.Unlock()
	tasks.stoppers = map[string]map[string]context.CancelFunc{}
	return nil
}

func startupFnRetried(ctx context.Context, a *kopfgo.Activity) error {
	if a.Retry < 3 {
		return kopfgo.TemporaryMsg(fmt.Sprintf("Going to succeed in %ds", 3-a.Retry), time.Second)
	}
	a.Logger.Info("Starting retried...")
	return nil
}

func cleanupFn(ctx context.Context, a *kopfgo.Activity) error {
	a.Logger.Info("Cleaning up...")
	tasks.Lock()
	for _, byName := range tasks.stoppers {
		for _, stop := range byName {
			stop()
		}
	}
	tasks.Unlock()
	a.Logger.Info("All pod-tasks are requested to stop...")
	tasks.wg.Wait()
	return nil
}

// loginFn logs in with the kubeconfig, like the built-in login, but slowly
// and with credentials that expire after 30 seconds: the operator then logs
// in again.
func loginFn(ctx context.Context, a *kopfgo.Activity) (*kopfgo.ConnectionInfo, error) {
	a.Logger.Info("Logging in in 2s...")
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(2 * time.Second):
	}
	info, err := kopfgo.LoginWithKubeconfig("", "")
	if err != nil || info == nil {
		return info, err
	}
	info.Expiration = time.Now().Add(30 * time.Second)
	return info, nil
}

func tasksCount(ctx context.Context, a *kopfgo.Activity) (any, error) {
	tasks.Lock()
	defer tasks.Unlock()
	n := 0
	for _, byName := range tasks.stoppers {
		n += len(byName)
	}
	return n, nil
}

func monitoredObjects(ctx context.Context, a *kopfgo.Activity) (any, error) {
	tasks.Lock()
	defer tasks.Unlock()
	out := map[string][]string{}
	for ns, byName := range tasks.stoppers {
		for name := range byName {
			out[ns] = append(out[ns], name)
		}
		sort.Strings(out[ns])
	}
	return out, nil
}

func podTask(ctx context.Context, e *kopfgo.WatchEvent) (any, error) {
	tasks.Lock()
	defer tasks.Unlock()
	if tasks.stoppers[e.Namespace] == nil {
		tasks.stoppers[e.Namespace] = map[string]context.CancelFunc{}
	}
	if _, ok := tasks.stoppers[e.Namespace][e.Name]; ok {
		return nil, nil
	}
	// The task outlives this event: it gets a context of its own, not the
	// handler's, and is stopped by the cleanup handler.
	taskCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	tasks.stoppers[e.Namespace][e.Name] = stop
	logger := e.Logger
	tasks.wg.Go(func() {
		for {
			select {
			case <-taskCtx.Done():
				logger.Info("Serving is finished by request.")
				return
			case <-time.After(time.Duration(1+rand.IntN(10)) * time.Second): // 1..10 s
				logger.Info("Served by the background task.")
			}
		}
	})
	return nil, nil
}
