package kopfgo

import "github.com/kopfgo/kopfgo/internal/handlers"

// Memo is in-memory state, never persisted (the manual's "In-memory
// containers"; compat: memos). Each object has one, Object.Memo, shared by
// all its handlers (changing, event, index) while the object exists and
// dropped when it is deleted; a re-created object starts afresh. The
// operator has one too, Operator.Memo (seeded with Options.Memo): every
// object's memo starts as a shallow copy of it, so a pointer put there
// before objects appear (a queue, a client, a struct of your own with its
// own lock) is shared by every object, while keys set later stay per object.
//
// Values are of type any, keyed by string; MemoValue reads one as the type
// you stored. A Memo is safe for concurrent use; the values you store are
// yours to guard.
type Memo = handlers.Memo

// MemoValue returns the value stored under key as a T; ok is false when
// there is none or it is of another type.
func MemoValue[T any](m *Memo, key string) (v T, ok bool) {
	raw, found := m.Load(key)
	if !found {
		return v, false
	}
	v, ok = raw.(T)
	return v, ok
}
