package chaos

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/persistence"
)

// snapshot is what the cluster holds of the objects right after an
// operator's death, before its successor starts: object name → body. An
// object absent from it is gone (or not yet created). A nil snapshot is
// one that could not be taken.
type snapshot map[string]map[string]any

// takeSnapshot lists the objects once the operator has exited. The list
// is a consistent read: it shows every patch the dead process got
// acknowledged, and whatever of its last requests the API server finished
// after the death (those count as persisted, rightly: its successor sees
// them too).
//
// The API server may be slow to answer or still restarting after a fault:
// the listing is retried for up to a minute, which delays the restart by as
// much (nothing can be persisted meanwhile, the operator being dead).
func (r *run) takeSnapshot(pid int) {
	var snap snapshot
	var list *unstructured.UnstructuredList
	var err error
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		list, err = r.dyn.Resource(kexGVR).Namespace(namespace).List(ctx, metav1.ListOptions{})
		cancel()
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		r.cfg.Logf("chaos: cannot list the objects at the death of %d (its duplicates go unchecked): %v", pid, err)
	} else {
		snap = make(snapshot, len(list.Items))
		for _, u := range list.Items {
			snap[u.GetName()] = u.Object
		}
	}
	r.mu.Lock()
	r.snapshots[pid] = snap
	r.mu.Unlock()
}

// The handler ids of the chaos operator, by the kind the journal names:
// field handlers get the field as a suffix unless their id is kept, so both
// are looked for.
var handlerIDs = map[string][]string{
	"create": {"create_fn"},
	"sub":    {"create_fn/sub"},
	"update": {"update_fn"},
	"field":  {"field_fn/spec.field", "field_fn"},
	"delete": {"delete_fn"},
}

var (
	progressStorage = persistence.Default()
	diffBaseStorage = diffbase.Default()
)

// persisted reports whether the success of a handler (kind) for a change
// of the object is on the object in the snapshot: the object is gone (it
// went through all its handlers), its diff-base holds the change (the
// cause was handled and its records purged), or the handler's progress
// record says success.
func (s snapshot) persisted(kind, name, change string) bool {
	body, ok := s[name]
	if !ok {
		return true
	}
	for _, id := range handlerIDs[kind] {
		if rec, err := progressStorage.Fetch(id, body); err == nil && rec != nil && rec.Success {
			return true
		}
	}
	base, err := diffBaseStorage.Fetch(body)
	if err != nil || base == nil {
		return false
	}
	switch kind {
	case "create", "sub":
		return true // a diff-base at all: the creation was handled
	case "update", "field":
		v, _ := dicts.Get(base, []string{"spec", "field"})
		return v == change
	}
	return false // delete: its record, or the object gone
}
