package reactor

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// unresolvedHooks records what the reactor tells readiness of unresolved
// resources.
type unresolvedHooks struct {
	nopHooks
	mu       sync.Mutex
	missing  []string
	blocking bool
	poke     func()
}

func (h *unresolvedHooks) Unresolved(missing []string, blocking bool) {
	h.mu.Lock()
	h.missing, h.blocking = missing, blocking
	h.mu.Unlock()
	h.poke()
}

func (h *unresolvedHooks) get() ([]string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.missing, h.blocking
}

// failed returns Run's error, for scenarios in which Run fails at start.
func (s *scenario) failed() error {
	err := <-s.done
	s.cancel = nil
	return err
}

func addCreate(reg *handling.Registry, resource, id string) {
	reg.AddChanging(handling.Registration{Resource: resource, Reason: causes.Create,
		Fn:        func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil },
		Configure: func(h *handling.Handler) { h.ID = id }})
}

func TestMistypedResourceIsUnresolvedWithTheNearestName(t *testing.T) {
	s := newScenario(t)
	hooks := &unresolvedHooks{poke: s.poke}
	s.hooks = hooks
	addCreate(s.reg, "kopfexampls", "create_fn")
	s.start()
	want := "kopfexampls for handlers create_fn (did you mean kopfexamples?)"
	s.until("the warning with the suggestion", func() bool { return strings.Contains(s.log.String(), want) })
	s.until("readiness told", func() bool {
		missing, blocking := hooks.get()
		return len(missing) == 1 && missing[0] == want && blocking
	})
}

func TestReadyWhileUnresolvedRelaxesReadiness(t *testing.T) {
	s := newScenario(t)
	s.settings.Scanning.ReadyWhileUnresolved = true
	hooks := &unresolvedHooks{poke: s.poke, blocking: true}
	s.hooks = hooks
	addCreate(s.reg, "widgets", "make_widget")
	s.start()
	s.until("readiness told, not blocking", func() bool {
		missing, blocking := hooks.get()
		return len(missing) == 1 && !blocking
	})
}

func TestStrictFailsRunOnAMistypedResource(t *testing.T) {
	s := newScenario(t)
	s.settings.Scanning.Strict = true
	addCreate(s.reg, "kopfexampls", "create_fn")
	s.start()
	err := s.failed()
	if !errors.Is(err, resources.ErrUnresolved) || !errors.Is(err, handlers.ErrRegistration) ||
		!strings.Contains(err.Error(), "create_fn") || !strings.Contains(err.Error(), "did you mean kopfexamples?") {
		t.Fatalf("Run = %v, want an unresolved resource naming create_fn and kopfexamples", err)
	}
}

// kexCRD defines KopfExamples with a schema: spec.replicas, and a status
// that keeps anything.
func kexCRD() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "kopfexamples.kopf.dev"},
		"spec": map[string]any{
			"group": "kopf.dev", "scope": "Namespaced",
			"names": map[string]any{"plural": "kopfexamples", "singular": "kopfexample", "kind": "KopfExample"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
					"spec": map[string]any{"type": "object", "properties": map[string]any{
						"replicas": map[string]any{"type": "integer"},
					}},
					"status": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
				}}}}},
		},
	}}
}

func addField(reg *handling.Registry, field, id string) {
	reg.AddChanging(handling.Registration{Resource: "kopfexamples", Reason: causes.Update, IsField: true, Field: field,
		Fn:        func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil },
		Configure: func(h *handling.Handler) { h.ID = id }})
}

func createCRD(t *testing.T, s *scenario) {
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := s.dyn.Resource(crdGVR).Create(context.Background(), kexCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestFieldPathOutsideTheSchemaIsAWarning(t *testing.T) {
	s := newScenario(t)
	createCRD(t, s)
	addField(s.reg, "spec.replica", "scale")
	addField(s.reg, "spec.replicas", "scale_right")
	addField(s.reg, "status.anything", "watch_status")
	s.start()
	s.until("the warning", func() bool {
		return strings.Contains(s.log.String(), "Handler scale/spec.replica: the field spec.replica is not in the schema of kopfexamples.v1.kopf.dev (did you mean spec.replicas?)")
	})
	s.stop()
	for _, id := range []string{"scale_right/spec.replicas", "watch_status/status.anything"} {
		if strings.Contains(s.log.String(), "Handler "+id+":") {
			t.Errorf("a warning about %s, whose path the schema declares:\n%s", id, s.log)
		}
	}
}

func TestStrictFailsRunOnAFieldPathOutsideTheSchema(t *testing.T) {
	s := newScenario(t)
	s.settings.Scanning.Strict = true
	createCRD(t, s)
	addField(s.reg, "spec.replica", "scale")
	s.start()
	err := s.failed()
	if !errors.Is(err, resources.ErrUnknownField) || !errors.Is(err, handlers.ErrRegistration) ||
		!strings.Contains(err.Error(), "handler scale/spec.replica") || !strings.Contains(err.Error(), "did you mean spec.replicas?") {
		t.Fatalf("Run = %v, want an unknown field naming the handler and spec.replicas", err)
	}
}
