package chaos

import (
	"testing"

	"github.com/kopfgo/kopfgo/patch"
	"github.com/kopfgo/kopfgo/persistence"
)

// body is an object of the chaos run with spec.field and, written by the
// storages as the operator writes them, the given successes and diff-base.
func body(t *testing.T, field string, succeeded []string, base map[string]any) map[string]any {
	t.Helper()
	obj := map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{"name": "kex-00001", "namespace": namespace},
		"spec":     map[string]any{"field": field},
	}
	p := &patch.Patch{}
	for _, id := range succeeded {
		progressStorage.Store(id, &persistence.Record{Success: true}, obj, p)
	}
	if base != nil {
		diffBaseStorage.Store(obj, p, base)
	}
	return p.Apply(obj)
}

func TestSnapshotPersisted(t *testing.T) {
	v1 := map[string]any{"spec": map[string]any{"field": "v1"}}
	tests := []struct {
		name   string
		snap   snapshot
		kind   string
		change string
		want   bool
	}{
		{"gone", snapshot{}, "create", "-", true},
		{"nothing yet", snapshot{"kex-00001": body(t, "v1", nil, nil)}, "create", "-", false},
		{"create's record", snapshot{"kex-00001": body(t, "v1", []string{"create_fn"}, nil)}, "create", "-", true},
		{"the sub-handler's record only", snapshot{"kex-00001": body(t, "v1", []string{"create_fn/sub"}, nil)}, "create", "-", false},
		{"the sub-handler's record", snapshot{"kex-00001": body(t, "v1", []string{"create_fn/sub"}, nil)}, "sub", "-", true},
		{"created: a diff-base", snapshot{"kex-00001": body(t, "v1", nil, v1)}, "sub", "-", true},
		{"update before its handling", snapshot{"kex-00001": body(t, "v2", nil, v1)}, "update", "v2", false},
		{"update's record", snapshot{"kex-00001": body(t, "v2", []string{"update_fn"}, v1)}, "update", "v2", true},
		{"field's record", snapshot{"kex-00001": body(t, "v2", []string{"field_fn/spec.field"}, v1)}, "field", "v2", true},
		{"field not yet", snapshot{"kex-00001": body(t, "v2", []string{"update_fn"}, v1)}, "field", "v2", false},
		{"update handled: its diff-base", snapshot{"kex-00001": body(t, "v2", nil, map[string]any{"spec": map[string]any{"field": "v2"}})}, "field", "v2", true},
		{"delete not yet", snapshot{"kex-00001": body(t, "v2", nil, v1)}, "delete", "-", false},
		{"delete's record", snapshot{"kex-00001": body(t, "v2", []string{"delete_fn"}, v1)}, "delete", "-", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.snap.persisted(tt.kind, "kex-00001", tt.change); got != tt.want {
				t.Errorf("persisted(%s, %s) = %v, want %v", tt.kind, tt.change, got, tt.want)
			}
		})
	}
}
