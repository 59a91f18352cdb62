package handlers

import "sync"

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
