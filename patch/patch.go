package patch

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/kopfgo/kopfgo/internal/dicts"
)

// Patch is a JSON merge patch being built. A nil value removes a field when
// the patch is applied; maps merge recursively; any other value (lists
// included) replaces the field. The zero value is an empty patch ready to use.
type Patch struct {
	root map[string]any

	// Fns are transformations of the whole object (Kopf's patch.fns), for
	// what a merge patch cannot say: an element of a list changed, added or
	// removed in place. Each gets the object with the merge patch and the
	// earlier Fns applied and changes it in place. Mutating admission
	// handlers send the result as a JSON patch; see Transform.
	Fns []func(body map[string]any) error

	// conditions wait for the object's current status.conditions (see
	// ChangeCondition).
	conditions []ConditionChange
}

// ConditionChange is a change to one condition of status.conditions that
// waits to be merged into the object's current list: a merge patch
// replaces a list whole, so the list can only be written by whoever has
// the object at hand, which the framework has when it sends the patch.
// Its fields are metav1.Condition's (handlers set conditions with
// Object.SetCondition, which takes that type; this package keeps to the
// standard library, for the pure packages that build patches).
type ConditionChange struct {
	Type    string
	Status  string // "True", "False" or "Unknown"
	Reason  string
	Message string
	// ObservedGeneration 0 means the generation of the object handled.
	ObservedGeneration int64
	// LastTransitionTime zero means the time the list is written, if
	// Status changes; a Status that stays keeps the time it has.
	LastTransitionTime time.Time
	// Remove removes the condition of the Type instead.
	Remove bool
}

// ChangeCondition queues a change to status.conditions: the framework
// merges the changes into the object's current list when it sends the
// patch, as meta.SetStatusCondition does, and sends the list only if it
// has changed. Several changes of one type: the last wins.
func (p *Patch) ChangeCondition(c ConditionChange) {
	if p.conditions == nil {
		// The framework's own come three at a time, on every pass.
		p.conditions = make([]ConditionChange, 0, 4)
	}
	p.conditions = append(p.conditions, c)
}

// Conditions are the condition changes waiting to be merged into the
// object's list, in the order they were made.
func (p *Patch) Conditions() []ConditionChange { return p.conditions }

// TakeConditions returns the waiting condition changes and forgets them:
// the framework calls it when it writes them into the patch.
func (p *Patch) TakeConditions() []ConditionChange {
	c := p.conditions
	p.conditions = nil
	return c
}

// Map returns the patch as a tree. It is the patch's own storage, not a copy.
func (p *Patch) Map() map[string]any {
	if p.root == nil {
		p.root = map[string]any{}
	}
	return p.root
}

// IsEmpty reports whether applying the patch would send nothing. Condition
// changes waiting to be merged (ChangeCondition) do not count: they are
// written into the patch, if they change anything, before it is sent.
func (p *Patch) IsEmpty() bool { return len(p.root) == 0 }

// Section returns the map at the given keys, creating it when absent, so that
// callers can write into it: p.Section("spec")["replicas"] = 3.
func (p *Patch) Section(keys ...string) map[string]any {
	cur := p.Map()
	for _, k := range keys {
		next, ok := cur[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[k] = next
		}
		cur = next
	}
	return cur
}

// Spec returns the patch's spec section for writing.
func (p *Patch) Spec() map[string]any { return p.Section("spec") }

// Status returns the patch's status section for writing.
func (p *Patch) Status() map[string]any { return p.Section("status") }

// Meta returns the patch's metadata section for writing.
func (p *Patch) Meta() map[string]any { return p.Section("metadata") }

// Labels returns the patch's metadata.labels section for writing.
func (p *Patch) Labels() map[string]any { return p.Section("metadata", "labels") }

// Annotations returns the patch's metadata.annotations section for writing.
func (p *Patch) Annotations() map[string]any { return p.Section("metadata", "annotations") }

// Set stores value at the keys path; a nil value removes the field on apply.
func (p *Patch) Set(keys []string, value any) { dicts.Set(p.Map(), keys, value) }

// SetAnnotation sets an annotation; RemoveAnnotation removes it on apply.
func (p *Patch) SetAnnotation(key, value string) { p.Annotations()[key] = value }

// RemoveAnnotation removes an annotation when the patch is applied.
func (p *Patch) RemoveAnnotation(key string) { p.Annotations()[key] = nil }

// Has reports whether the patch sets or removes the field at keys.
func (p *Patch) Has(keys ...string) bool {
	_, ok := dicts.Get(p.root, keys)
	return ok
}

// Merge folds other into p with merge-patch semantics: nested maps merge,
// everything else (nil included) overwrites.
func (p *Patch) Merge(other *Patch) {
	if other == nil {
		return
	}
	p.conditions = append(p.conditions, other.conditions...)
	if other.IsEmpty() {
		return
	}
	mergeInto(p.Map(), other.root)
}

func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeInto(dm, sm)
				continue
			}
			dst[k] = dicts.DeepCopyMap(sm)
			continue
		}
		dst[k] = dicts.DeepCopy(v)
	}
}

// Split separates the status section from the rest, for resources whose
// status is a subresource: the API server ignores status in main-resource
// patches there, and everything but status in status patches.
func (p *Patch) Split() (main, status map[string]any) {
	main = make(map[string]any, len(p.root))
	for k, v := range p.root {
		if k == "status" {
			if s, ok := v.(map[string]any); ok {
				if len(s) > 0 {
					status = map[string]any{"status": s}
				}
				continue
			}
			status = map[string]any{"status": v}
			continue
		}
		main[k] = v
	}
	if len(main) == 0 {
		main = nil
	}
	return main, status
}

// MarshalJSON encodes the patch as the merge-patch document.
func (p *Patch) MarshalJSON() ([]byte, error) {
	if p.root == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(p.root)
}

// Apply returns a copy of body with the patch applied using merge-patch
// semantics. The framework uses it to predict an object's state after its own
// patch, e.g. for logging and for handlers that read their own writes.
func (p *Patch) Apply(body map[string]any) map[string]any {
	out := dicts.DeepCopyMap(body)
	if out == nil {
		out = map[string]any{}
	}
	applyInto(out, p.root)
	return out
}

func applyInto(dst, src map[string]any) {
	for k, v := range src {
		switch t := v.(type) {
		case nil:
			delete(dst, k)
		case map[string]any:
			dm, ok := dst[k].(map[string]any)
			if !ok || dm == nil {
				dm = map[string]any{}
				dst[k] = dm
			}
			applyInto(dm, t)
		default:
			dst[k] = dicts.DeepCopy(t)
		}
	}
}

// Transform returns a copy of body with the merge patch applied and then
// every function of Fns, in order (Kopf's order: the merge patch first,
// since it knows nothing of the transformations).
func (p *Patch) Transform(body map[string]any) (map[string]any, error) {
	out := p.Apply(body)
	for i, fn := range p.Fns {
		if fn == nil {
			continue
		}
		if err := fn(out); err != nil {
			return nil, fmt.Errorf("patch function %d: %w", i, err)
		}
	}
	return out, nil
}
