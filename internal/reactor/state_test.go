package reactor

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/kopfgo/kopfgo/internal/kube"
)

// A pass reads its object from the informer's store, then takes its state.
// The informer drops a deleted object from the store before its DELETED
// observation drops the state, so a pass can come with the last cached
// version of an object whose state is already gone. It must find the object
// gone rather than start it a fresh state, which would know nothing of the
// finalizer the operator released and run the delete handlers again.
func TestStateOfAnObjectDeletedMeanwhile(t *testing.T) {
	const key = "ns/kex1"
	object := func(uid string) *kube.Compact {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
			"metadata": map[string]any{"namespace": "ns", "name": "kex1", "uid": uid, "resourceVersion": "7"},
		}}
		c, err := kube.CompactOf(u, true)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, tc := range []struct {
		name   string
		stored *kube.Compact // what the store holds now
		kept   bool          // the state of uid1 is still kept (no DELETED observed yet)
		want   bool          // the pass goes on
	}{
		{name: "stored, state kept", stored: object("uid1"), kept: true, want: true},
		{name: "stored, no state yet (the store is ahead of the observations)", stored: object("uid1"), want: true},
		{name: "deleted and observed: the pass's body is the last cached version", want: false},
		{name: "replaced by another object of the name and the old one observed deleted", stored: object("uid2"), want: false},
		// The DELETED observation is still to come: the kept state goes
		// on, and what it knows (released) stops the pass.
		{name: "deleted, not yet observed", kept: true, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &watcher{run: &run{}, store: cache.NewStore(cache.MetaNamespaceKeyFunc), states: map[string]*state{}}
			var kept *state
			if tc.kept {
				kept = w.newState("uid1")
				kept.released = true
				w.states[key] = kept
			}
			if tc.stored != nil {
				if err := w.store.Add(tc.stored); err != nil {
					t.Fatal(err)
				}
			}
			wk := &worker{key: key}
			st, ok := w.stateOf(wk, "uid1")
			if ok != tc.want {
				t.Fatalf("stateOf goes on = %v, want %v", ok, tc.want)
			}
			switch {
			case !ok && len(w.states) != 0:
				t.Errorf("a state was left for a gone object: %v", w.states)
			case ok && tc.kept && st != kept:
				t.Errorf("the kept state was replaced")
			case ok && st == nil:
				t.Errorf("no state for an object still stored")
			}
		})
	}
}
