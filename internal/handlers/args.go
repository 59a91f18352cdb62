package handlers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/patch"
)

// Object is what every per-object handler receives about its object. Body is
// the object as last seen; Spec, Meta and Status are views into it (never
// nil). Handlers must not modify them: write changes into Patch instead.
type Object struct {
	Body        map[string]any
	Spec        map[string]any
	Meta        map[string]any
	Status      map[string]any
	Name        string
	Namespace   string // "" for cluster-scoped objects
	UID         string
	Labels      map[string]string // empty, never nil, when absent
	Annotations map[string]string // empty, never nil, when absent
	Resource    resources.Resource
	// Patch collects changes to the object, applied as merge patches after
	// the handler returns: Patch.Spec()["x"] = 1, Patch.Status()["y"] = nil.
	Patch *patch.Patch
	// Logger prefixes messages with the object, e.g. [default/kopf-example-1].
	Logger *slog.Logger
	// Memo is per-object state kept in memory while the object exists; it is
	// not persisted.
	Memo *Memo
	// Param is the value given with the Param option at registration.
	Param any
}

// SetCondition sets a condition of the object's status.conditions, of
// the handler's own type (the framework keeps Ready, Reconciling and
// Stalled: docs/conditions.md). It goes into Patch, and is merged into the
// object's current list when the patch is sent, as meta.SetStatusCondition
// does: LastTransitionTime moves only when Status changes (or is the one
// given), ObservedGeneration 0 becomes the handled object's generation,
// and an unchanged condition costs no write. It is written whether or not
// the framework's own conditions are on (Settings.Persistence.Conditions).
func (o Object) SetCondition(c metav1.Condition) {
	o.Patch.ChangeCondition(patch.ConditionChange{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message,
		ObservedGeneration: c.ObservedGeneration, LastTransitionTime: c.LastTransitionTime.Time})
}

// RemoveCondition removes the condition of the type from the object's
// status.conditions when Patch is sent.
func (o Object) RemoveCondition(conditionType string) {
	o.Patch.ChangeCondition(patch.ConditionChange{Type: conditionType, Remove: true})
}

// Attempt describes the current attempt of a retried handler.
type Attempt struct {
	Retry   int           // 0 on the first attempt
	Started time.Time     // the first attempt, persisted across retries and restarts
	Runtime time.Duration // since Started
}

// Change is the argument of create, update, delete, resume and field
// handlers. Old and New are the essences of the object (or the field's values
// for field handlers); nil means absent. Diff lists the changes between them
// in Kopf's format.
type Change struct {
	Object
	Attempt
	Reason causes.Reason
	Diff   diffbase.Diff
	Old    any
	New    any
}

// ChangeFunc is a resource-changing handler. A non-nil result is stored at
// status.<handler-id>: a map is merged there, anything else replaces it.
type ChangeFunc func(ctx context.Context, c *Change) (any, error)

// NewObject fills the object part of handler arguments from a body.
func NewObject(body map[string]any, res resources.Resource, p *patch.Patch, logger *slog.Logger) Object {
	meta := nonNilMap(dicts.Map(body, "metadata"))
	return Object{
		Body:        body,
		Spec:        nonNilMap(dicts.Map(body, "spec")),
		Meta:        meta,
		Status:      nonNilMap(dicts.Map(body, "status")),
		Name:        dicts.String(meta, "name"),
		Namespace:   dicts.String(meta, "namespace"),
		UID:         dicts.String(meta, "uid"),
		Labels:      stringMap(meta["labels"]),
		Annotations: stringMap(meta["annotations"]),
		Resource:    res,
		Patch:       p,
		Logger:      logger,
	}
}

func nonNilMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func stringMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	out := make(map[string]string, len(m))
	for k, x := range m {
		if s, ok := x.(string); ok {
			out[k] = s
		}
	}
	return out
}

// Memo is in-memory state kept per object while the object exists (and per
// operator for the operator-level memo): handlers of one object and its
// daemons share it. It is never persisted: after a restart it starts empty.
// Safe for concurrent use.
type Memo struct {
	m sync.Map
}

// Load returns the value stored under key.
func (m *Memo) Load(key string) (any, bool) { return m.m.Load(key) }

// Store stores value under key.
func (m *Memo) Store(key string, value any) { m.m.Store(key, value) }

// LoadOrStore returns the existing value for key, or stores and returns value.
func (m *Memo) LoadOrStore(key string, value any) (actual any, loaded bool) {
	return m.m.LoadOrStore(key, value)
}

// Delete removes key.
func (m *Memo) Delete(key string) { m.m.Delete(key) }

// Range calls fn for each key and value until fn returns false.
func (m *Memo) Range(fn func(key string, value any) bool) {
	m.m.Range(func(k, v any) bool { return fn(k.(string), v) })
}

// Copy returns a shallow copy: the keys are copied, the values shared. Each
// object's memo starts as a copy of the operator's memo (compat: memos-operator), so a
// pointer stored in the operator's memo before objects appear is shared by
// all of them, while keys set later stay per object.
func (m *Memo) Copy() *Memo {
	c := &Memo{}
	m.m.Range(func(k, v any) bool {
		c.m.Store(k, v)
		return true
	})
	return c
}
