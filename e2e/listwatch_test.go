//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopfgo/kopfgo"
)

// bodies records what create handlers saw of each object's body.
type bodies struct {
	mu   sync.Mutex
	seen map[string]map[string]any
}

func (b *bodies) fn(ctx context.Context, ch *kopfgo.Change) (any, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen == nil {
		b.seen = map[string]map[string]any{}
	}
	_, managed := ch.Meta["managedFields"]
	b.seen[ch.Name] = map[string]any{
		"apiVersion": ch.Body["apiVersion"], "kind": ch.Body["kind"],
		"spec": ch.Body["spec"], "data": ch.Body["data"], "managedFields": managed,
	}
	return nil, nil
}

func (b *bodies) get(name string) map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seen[name]
}

// The operator lists and watches with its own decoder: handlers must see
// the objects exactly as the API server has them (integers beyond a
// float64's precision included), listed or watched, built-in or custom,
// and without managedFields unless the setting keeps them.
func TestHandlersSeeObjectsAsStoredWithoutManagedFieldsUnlessKept(t *testing.T) {
	spec := map[string]any{
		"big":    int64(9007199254740993), // 2^53+1: not a float64
		"neg":    int64(-3),
		"ratio":  0.25,
		"nested": map[string]any{"list": []any{int64(1), 2.5, "x", true, nil}, "empty": map[string]any{}},
		"text":   "é\n\"quoted\"",
	}
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("KeepManagedFields=%v", keep), func(t *testing.T) {
			ns := namespace(t)
			ctx := context.Background()
			kexFor := func(name string) map[string]any {
				return map[string]any{
					"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
					"metadata": map[string]any{"name": name}, "spec": spec,
				}
			}
			cmFor := func(name string) *corev1.ConfigMap {
				return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"key": "value"}}
			}
			// Listed at the start: lists of built-in resources leave the
			// items' kind out, which handlers still see.
			createKex(t, ns, kexFor("listed"))
			if _, err := kube(t).CoreV1().ConfigMaps(ns).Create(ctx, cmFor("listed-cm"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}

			var seen bodies
			opts := kopfgo.Options{Namespaces: []string{ns}}
			opts.Settings.Watching.KeepManagedFields = keep
			embeddedWith(t, opts, func(op *kopfgo.Operator) {
				op.On.Create("kopfexamples", seen.fn, kopfgo.ID("create"))
				op.On.Create("configmaps", seen.fn, kopfgo.ID("create"))
			})
			waitSeen := func(names ...string) {
				for _, name := range names {
					eventually(t, waitShort, "the handler seeing "+name, func() (bool, error) { return seen.get(name) != nil, nil })
				}
			}
			waitSeen("listed", "listed-cm")

			// Watched: created while the operator runs.
			createKex(t, ns, kexFor("watched"))
			if _, err := kube(t).CoreV1().ConfigMaps(ns).Create(ctx, cmFor("watched-cm"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitSeen("watched", "watched-cm")

			for name, want := range map[string]map[string]any{
				"listed":     {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "spec": spec, "data": nil, "managedFields": keep},
				"watched":    {"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "spec": spec, "data": nil, "managedFields": keep},
				"listed-cm":  {"apiVersion": "v1", "kind": "ConfigMap", "spec": nil, "data": map[string]any{"key": "value"}, "managedFields": keep},
				"watched-cm": {"apiVersion": "v1", "kind": "ConfigMap", "spec": nil, "data": map[string]any{"key": "value"}, "managedFields": keep},
			} {
				if got := seen.get(name); !reflect.DeepEqual(got, want) {
					t.Errorf("%s: the handler saw %#v\nwant                %#v", name, got, want)
				}
			}
		})
	}
}
