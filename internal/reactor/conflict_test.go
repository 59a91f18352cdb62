package reactor

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/handlers"
)

// A 409 Conflict on a patch without a resourceVersion (the status part of a
// pass, say) is not the finalizers' optimistic lock: it was dropped
// silently, leaving the handler's success unwritten and the object
// unhandled until its next change. It is an error like any other: logged,
// throttled, and the pass is retried (found by the e2e bad-input table).
func TestConflictOnAnUnguardedPatchIsLoggedAndRetried(t *testing.T) {
	s := newScenario(t)
	s.statusSubresource = true
	var conflicted atomic.Bool
	s.dyn.PrependReactor("patch", "kopfexamples", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && conflicted.CompareAndSwap(false, true) {
			return true, nil, apierrors.NewConflict(kexGVR.GroupResource(), "kex1", errConflict)
		}
		return false, nil, nil
	})
	var calls counter
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		calls.inc(c.Name)
		return map[string]any{"message": "hello"}, nil
	})
	s.create("kex1", map[string]any{"field": "value"})
	s.start()
	s.until("the conflict logged", func() bool {
		return strings.Contains(s.log.String(), "Throttling for 1 seconds due to an unexpected error") &&
			strings.Contains(s.log.String(), "the object has been modified")
	})
	s.until("handled after the throttling", func() bool {
		s.clock.Step(time.Second) // the throttling waits on the fake clock
		_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
		return ok
	})
	if n := calls.get("kex1"); n < 1 {
		t.Errorf("handler called %d times", n)
	}
}

var errConflict = errorString("the object has been modified; please apply your changes to the latest version and try again")

type errorString string

func (e errorString) Error() string { return string(e) }

// After a conflict, the finalizers are recomputed from the fresh object: the
// retry once sent the list of the failed attempt, restoring a finalizer that
// another controller had removed meanwhile (on a deleting object the API
// rejects that, and the delete handlers ran again; found by the e2e
// bad-input table).
func TestFinalizersAfterAConflictAreRecomputedFromTheFreshObject(t *testing.T) {
	s := newScenario(t)
	var (
		conflicted atomic.Bool
		mu         sync.Mutex
		sent       []string
	)
	s.dyn.PrependReactor("patch", "kopfexamples", func(a clienttesting.Action) (bool, runtime.Object, error) {
		data := string(a.(clienttesting.PatchAction).GetPatch())
		if !strings.Contains(data, "finalizers") {
			return false, nil, nil
		}
		mu.Lock()
		sent = append(sent, data)
		mu.Unlock()
		if conflicted.CompareAndSwap(false, true) {
			// Another controller removes its finalizer before this patch lands.
			// (The tracker directly: the fake holds its own lock while reacting.)
			obj, err := s.dyn.Tracker().Get(kexGVR, "default", "kex1")
			if err != nil {
				t.Error(err)
				return true, nil, err
			}
			u := obj.(*unstructured.Unstructured).DeepCopy()
			u.SetFinalizers(nil)
			u.SetResourceVersion("other")
			if err := s.dyn.Tracker().Update(kexGVR, u, "default"); err != nil {
				t.Error(err)
			}
			return true, nil, apierrors.NewConflict(kexGVR.GroupResource(), "kex1", errConflict)
		}
		return false, nil, nil
	})
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil })
	s.on(causes.Delete, "delete_fn", func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil })
	s.create("kex1", map[string]any{"field": "value"})
	s.update("kex1", func(u *unstructured.Unstructured) { u.SetFinalizers([]string{"example.com/other"}) })
	s.start()
	s.until("the finalizer added", func() bool {
		return slices.Contains(s.get("kex1").GetFinalizers(), "kopf.zalando.org/KopfFinalizerMarker")
	})
	if got := s.get("kex1").GetFinalizers(); len(got) != 1 {
		t.Errorf("finalizers = %v, want kopfgo's only: the other was removed meanwhile", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) < 2 || strings.Contains(sent[len(sent)-1], "example.com/other") {
		t.Errorf("patches sent: %q; the retry must not restore example.com/other", sent)
	}
}
