package kopfgo

import (
	"context"
	"errors"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/posting"
)

type recorder struct {
	mu     sync.Mutex
	bodies []map[string]any
}

func (r *recorder) PostEvent(_ context.Context, _ string, body map[string]any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bodies = append(r.bodies, body)
	return nil
}

func handlerArg() *Change {
	return &Change{Object: Object{Body: map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{"name": "kopf-example-1", "namespace": "ns1", "uid": "uid-1", "labels": map[string]any{"a": "b"}},
	}}}
}

// The objects events can be about: the handler's argument, a typed child
// with its TypeMeta empty, a slice of them (one event each).
func TestEventTargets(t *testing.T) {
	rec := &recorder{}
	p := posting.New(posting.Config{Client: rec, Settings: config.Settings{}.WithDefaults().Posting})
	ctx := posting.WithPoster(context.Background(), p)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "child", Namespace: "ns1", UID: "uid-pod"}}
	for _, err := range []error{
		Info(ctx, handlerArg(), "R", "about the handled object"),
		Warn(ctx, pod, "R", "about a typed child"),
		Event(ctx, []any{handlerArg(), pod}, "T", "R", "about both"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	stopped, stop := context.WithCancel(context.Background())
	stop()
	p.Run(stopped)
	var got []string
	for _, b := range rec.bodies {
		inv := b["involvedObject"].(map[string]any)
		got = append(got, inv["apiVersion"].(string)+" "+inv["kind"].(string)+" "+inv["uid"].(string))
	}
	want := []string{"kopf.dev/v1 KopfExample uid-1", "v1 Pod uid-pod", "kopf.dev/v1 KopfExample uid-1", "v1 Pod uid-pod"}
	if len(got) != len(want) {
		t.Fatalf("events about %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d about %q, want %q", i, got[i], want[i])
		}
	}
}

func TestEventsOutsideAnOperator(t *testing.T) {
	if err := Info(context.Background(), handlerArg(), "R", "m"); !errors.Is(err, ErrNoOperator) {
		t.Errorf("Info outside an operator: %v, want ErrNoOperator", err)
	}
}
