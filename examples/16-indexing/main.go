// Package indexing keeps two in-memory indices of the pods the operator
// sees, and reports from them every 5 seconds for every KopfExample, without
// a single API call of its own for the pods. Run:
//
//	kopfgo run ./examples/16-indexing
package indexing

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kopfgo/kopfgo"
)

// PodKey and LabelKey are the indices' keys: Go's answer to Kopf's tuples.
type PodKey struct{ Namespace, Name string }

type LabelKey struct{ Label, Value string }

// The indices, registered by Register; the handlers close over them.
var (
	// isRunning: {(namespace, name): running?} for every pod.
	isRunning *kopfgo.Index[PodKey, bool]
	// byLabel: {(label, value): [pod names]}.
	byLabel *kopfgo.Index[LabelKey, string]
)

func Register(r kopfgo.Registrar) {
	isRunning = kopfgo.OnIndex(r, "pods", indexIsRunning, kopfgo.ID("is_running"))
	byLabel = kopfgo.OnIndex(r, "pods", indexByLabel, kopfgo.ID("by_label"))
	// Probes: served with --liveness=http://0.0.0.0:8080/healthz. Indices
	// are usable from operator-level handlers too, though these may run
	// before the indices are complete.
	r.Probe(podCount, kopfgo.ID("pod_count"))
	r.Probe(podNames, kopfgo.ID("pod_names"))
	r.Timer("kex", intervalled, kopfgo.ID("intervalled"), kopfgo.Interval(5*time.Second))
}

// reportedNamespaces are the namespaces whose running pods go to the
// status: Kopf's example has kube-system and default; RUNNING_PODS_NAMESPACES
// (comma-separated) changes them, as the e2e test does for its own.
var reportedNamespaces = func() []string {
	if v := os.Getenv("RUNNING_PODS_NAMESPACES"); v != "" {
		return strings.Split(v, ",")
	}
	return []string{"kube-system", "default"}
}()

func podCount(ctx context.Context, a *kopfgo.Activity) (any, error) {
	return isRunning.Len(), nil
}

func podNames(ctx context.Context, a *kopfgo.Activity) (any, error) {
	names := []string{}
	for _, key := range isRunning.Keys() {
		names = append(names, key.Name)
	}
	slices.Sort(names)
	return names, nil
}

func indexIsRunning(ctx context.Context, o *kopfgo.Object) (map[PodKey]bool, error) {
	return map[PodKey]bool{{o.Namespace, o.Name}: o.Status["phase"] == "Running"}, nil
}

func indexByLabel(ctx context.Context, o *kopfgo.Object) (map[LabelKey]string, error) {
	out := make(map[LabelKey]string, len(o.Labels))
	for label, value := range o.Labels {
		out[LabelKey{label, value}] = o.Name
	}
	return out, nil
}

// intervalled logs the labels index and stores the running pods of the
// reported namespaces in the KopfExample's status, every 5 seconds. A
// status that does not change makes no new event.
func intervalled(ctx context.Context, t *kopfgo.Spawn) (any, error) {
	var labels []string
	for key, names := range byLabel.All() {
		slices.Sort(names)
		labels = append(labels, fmt.Sprintf("%s=%s: %s", key.Label, key.Value, strings.Join(names, ",")))
	}
	slices.Sort(labels)
	t.Logger.Info(fmt.Sprintf("Pods by label: %s", strings.Join(labels, "; ")))

	running := []string{}
	for key, values := range isRunning.All() {
		if slices.Contains(reportedNamespaces, key.Namespace) && values[0] { // one value per key: a pod's key is its own
			running = append(running, key.Namespace+"::"+key.Name)
		}
	}
	slices.Sort(running)
	t.Patch.Status()["running-pods"] = running
	return nil, nil
}
