package kopfgo

import (
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
)

// Filters restrict a handler to matching objects (the manual's
// "Filtering"; compat: filters). All the filters of a handler must match.
// They fit every handler of resources unless said otherwise:
//
//	kopfgo.On.Create("kopfexamples", fn,
//		kopfgo.Labels{"app": "web", "tier": kopfgo.Present, "legacy": kopfgo.Absent},
//		kopfgo.Annotations{"owner": func(v any) bool { return v != nil }},
//		kopfgo.Field("spec.field"), kopfgo.Value("world"),
//		kopfgo.When(func(o *kopfgo.Object) bool { return o.Namespace != "kube-system" }))
//
// Filter values are an exact value, Present, Absent, or a callback
// func(v any) bool that gets the value (nil when absent); for labels and
// annotations an exact value is a string. nil is not a filter value.
//
// Objects that no changing handler of their resource matches are handled in
// stealth mode: the operator stores nothing on them and logs nothing about
// them, and when they start matching later, they are new to it: the creation
// handlers run, not the update handlers (compat: filters-stealth). A field
// handler on a field that never exists keeps every object in scope if that is
// not wanted.

// Marker is a filter value that checks presence: Present or Absent.
type Marker = handlers.Marker

const (
	// Present matches a label, annotation or field that exists, with any
	// value (an empty string included).
	Present = handlers.Present
	// Absent matches a label, annotation or field that does not exist.
	Absent = handlers.Absent
)

// CommonOption fits every handler kind, activities included: ID and Param.
type CommonOption interface {
	HandlerOption
	FilterOption
}

type commonOption func(*handling.Handler)

func (o commonOption) applyChange(h *handling.Handler)             { o(h) }
func (o commonOption) applyEvent(h *handling.Handler)              { o(h) }
func (o commonOption) applyIndex(h *handling.Handler)              { o(h) }
func (o commonOption) applyActivity(h *handling.Handler)           { o(h) }
func (o commonOption) applySpawn(s *handling.Spawning)             { o(&s.Handler) }
func (o commonOption) applyAdmission(h *handling.AdmissionHandler) { o(&h.Handler) }

// FilterOption fits every handler of resources (not the activities, which
// have no object): Labels, Annotations, Field, Value, When. Event handlers
// take FilterOptions only (ID and Param are CommonOptions, which are
// FilterOptions too).
type FilterOption interface {
	ChangeOption
	SpawnOption
	IndexOption
	AdmissionOption
	applyEvent(*handling.Handler)
}

type filterOption func(*handling.Handler)

func (o filterOption) applyChange(h *handling.Handler)             { o(h) }
func (o filterOption) applyEvent(h *handling.Handler)              { o(h) }
func (o filterOption) applyIndex(h *handling.Handler)              { o(h) }
func (o filterOption) applySpawn(s *handling.Spawning)             { o(&s.Handler) }
func (o filterOption) applyAdmission(h *handling.AdmissionHandler) { o(&h.Handler) }

// Labels requires labels: each key with an exact string value, Present,
// Absent, or a func(v any) bool callback (v is the label's string value, or
// nil when the label is absent). It fits every handler kind of resources.
type Labels map[string]any

func (l Labels) applyChange(h *handling.Handler)             { h.Filters.AddLabels(l) }
func (l Labels) applyEvent(h *handling.Handler)              { h.Filters.AddLabels(l) }
func (l Labels) applyIndex(h *handling.Handler)              { h.Filters.AddLabels(l) }
func (l Labels) applySpawn(s *handling.Spawning)             { s.Filters.AddLabels(l) }
func (l Labels) applyAdmission(h *handling.AdmissionHandler) { h.Filters.AddLabels(l) }

// Annotations requires annotations, as Labels requires labels.
type Annotations map[string]any

func (a Annotations) applyChange(h *handling.Handler)             { h.Filters.AddAnnotations(a) }
func (a Annotations) applyEvent(h *handling.Handler)              { h.Filters.AddAnnotations(a) }
func (a Annotations) applyIndex(h *handling.Handler)              { h.Filters.AddAnnotations(a) }
func (a Annotations) applySpawn(s *handling.Spawning)             { s.Filters.AddAnnotations(a) }
func (a Annotations) applyAdmission(h *handling.AdmissionHandler) { h.Filters.AddAnnotations(a) }

// Field names the field (a dotted path, "spec.size") that Value, Old and
// New check. Alone, it requires the field to be present. On update handlers
// it also requires the field to change (a presence change counts), and the
// handler sees Old, New and Diff relative to the field, as a field handler
// does; On.Update(r, fn, Field(f)) is On.Field(r, f, fn). The handler's id
// gets "/<field>" appended (compat: handlers-ids), so that one function can be registered
// for several fields; an index's name does not.
//
// Which state is checked depends on the handler (compat: filters-field,
// filters-field-change): create, resume and delete handlers check the object's
// state, and its last handled state when there is one; update and field
// handlers match when the old or the new value passes; event handlers,
// indexers, daemons and timers check the object as it is.
func Field(path string) FilterOption {
	return filterOption(func(h *handling.Handler) { h.Filters.SetField(path) })
}

// Value checks the Field's value: an exact value (compared as JSON, so 1
// matches 1.0), Present, Absent, or a func(v any) bool. On update and field
// handlers it matches when either the old or the new value passes, covering
// both sides of the transition; use OldValue and NewValue to check one side. It needs
// Field (or On.Field).
func Value(v any) FilterOption {
	return filterOption(func(h *handling.Handler) { h.Filters.SetValue(v) })
}

// OldValue checks the Field's value before the change (Absent when it was
// not there): an exact value, Present, Absent or a callback; Kopf's old=.
// The handler runs only when the value changes. It fits update and field
// handlers only (compat: filters-old-new): on other changing handlers it is
// a registration error. It excludes Value.
func OldValue(v any) ChangeOption {
	return changeOption(func(h *handling.Handler) { h.Filters.SetOld(v) })
}

// NewValue checks the Field's value after the change, as OldValue checks it
// before; Kopf's new=.
func NewValue(v any) ChangeOption {
	return changeOption(func(h *handling.Handler) { h.Filters.SetNew(v) })
}

// When requires fn to hold for the object; it runs after every other filter has
// matched (compat: filters-all-kinds, filters-when). It must not change
// anything. It fits every handler of resources; WhenChange sees the change too.
func When(fn func(o *Object) bool) FilterOption {
	return filterOption(func(h *handling.Handler) { h.Filters.AddWhen(fn) })
}

// WhenChange requires fn to hold for the change being handled: Reason, Old,
// New and Diff are those of the whole object (compat: filters-when). It fits
// resource-changing handlers.
func WhenChange(fn func(c *Change) bool) ChangeOption {
	return changeOption(func(h *handling.Handler) { h.Filters.AddWhenChange(fn) })
}

// AllOf holds when every fn holds (true for none). It combines value
// callbacks (func(any) bool) and When callbacks alike (compat: filters-combinators).
func AllOf[T any](fns ...func(T) bool) func(T) bool {
	return func(v T) bool {
		for _, fn := range fns {
			if !fn(v) {
				return false
			}
		}
		return true
	}
}

// AnyOf holds when some fn holds (false for none).
func AnyOf[T any](fns ...func(T) bool) func(T) bool {
	return func(v T) bool {
		for _, fn := range fns {
			if fn(v) {
				return true
			}
		}
		return false
	}
}

// NoneOf holds when no fn holds (true for none).
func NoneOf[T any](fns ...func(T) bool) func(T) bool {
	return func(v T) bool {
		for _, fn := range fns {
			if fn(v) {
				return false
			}
		}
		return true
	}
}

// Not holds when fn does not.
func Not[T any](fn func(T) bool) func(T) bool {
	return func(v T) bool { return !fn(v) }
}
