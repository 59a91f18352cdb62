package diffbase

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/kopfgo/kopfgo/internal/dicts"
)

// Op is the kind of one change in a Diff, spelled as in Kopf.
type Op string

const (
	Add    Op = "add"
	Change Op = "change"
	Remove Op = "remove"
)

// Item is one change: the operation, the path of keys to the changed field
// (empty for the root), and the old and new values, nil meaning absent.
//
// Old and New share memory with the essences they were computed from and
// Path may share memory with other items: treat them as read-only.
type Item struct {
	Op   Op
	Path []string
	Old  any
	New  any
}

// Diff is a list of changes in Kopf's order (compat: persistence-diff).
type Diff []Item

// MarshalJSON writes the item as Kopf's 4-tuple, ["change",["spec","x"],1,2],
// so that diffs logged or stored by kopfgo read the same as Kopf's.
func (it Item) MarshalJSON() ([]byte, error) {
	path := it.Path
	if path == nil {
		path = []string{} // the root is (), never null
	}
	b, err := encodeValue([]any{string(it.Op), path, it.Old, it.New})
	return bytes.TrimRight(b, "\n"), err
}

// UnmarshalJSON reads Kopf's 4-tuple. Numbers come back as int64 when
// integral and float64 otherwise, as client-go decodes bodies.
func (it *Item) UnmarshalJSON(data []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if len(raw) != 4 {
		return fmt.Errorf("diff item: want 4 elements [op, path, old, new], got %d", len(raw))
	}
	var op string
	if err := json.Unmarshal(raw[0], &op); err != nil {
		return fmt.Errorf("diff item op: %w", err)
	}
	switch Op(op) {
	case Add, Change, Remove:
	default:
		return fmt.Errorf("diff item op: %q is none of add, change, remove", op)
	}
	var path []string
	if err := json.Unmarshal(raw[1], &path); err != nil {
		return fmt.Errorf("diff item path: %w", err)
	}
	old, err := decodeValue(raw[2])
	if err != nil {
		return fmt.Errorf("diff item old value: %w", err)
	}
	new, err := decodeValue(raw[3])
	if err != nil {
		return fmt.Errorf("diff item new value: %w", err)
	}
	*it = Item{Op: Op(op), Path: path, Old: old, New: new}
	return nil
}

// MarshalJSON writes an empty diff as [] rather than null: Kopf's diffs are
// always tuples, and consumers of logs or results should not special-case.
// Like Python, it leaves <, > and & unescaped; json.Marshal escapes them
// again around any marshaler, an encoder with SetEscapeHTML(false) does not.
func (d Diff) MarshalJSON() ([]byte, error) {
	if d == nil {
		return []byte("[]"), nil
	}
	b, err := encodeValue([]Item(d))
	return bytes.TrimRight(b, "\n"), err
}

// Compute returns the changes from old to new with Kopf's algorithm: maps are
// recursed into; lists and scalars are compared as a whole (a list that grew
// is one "change"); nil is absence, so a key going from nil to a value is an
// "add". Within one map, changes come as in Kopf: added keys, then removed
// keys, then common keys; Kopf leaves each group in set order, kopfgo sorts
// each group by key so that the same change always reads the same.
func Compute(old, new any) Diff {
	return appendDiff(nil, nil, old, new)
}

func appendDiff(d Diff, path []string, a, b any) Diff {
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	switch {
	case dicts.Absent(a) && dicts.Absent(b):
		return d
	case dicts.Absent(a):
		return append(d, Item{Op: Add, Path: slices.Clone(path), New: b})
	case dicts.Absent(b):
		return append(d, Item{Op: Remove, Path: slices.Clone(path), Old: a})
	case aIsMap && bIsMap:
		return appendMapDiff(d, path, am, bm)
	case dicts.Equal(a, b):
		return d
	default:
		return append(d, Item{Op: Change, Path: slices.Clone(path), Old: a, New: b})
	}
}

func appendMapDiff(d Diff, path []string, a, b map[string]any) Diff {
	// Most events carry no essential change: answer those without
	// allocating the key lists.
	if dicts.Equal(a, b) {
		return d
	}
	keys := make([]string, 0, len(a)+len(b))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	nAdded := len(keys)
	for k := range a {
		if _, ok := b[k]; !ok {
			keys = append(keys, k)
		}
	}
	nRemoved := len(keys) - nAdded
	for k := range a {
		if _, ok := b[k]; ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys[:nAdded])
	slices.Sort(keys[nAdded : nAdded+nRemoved])
	slices.Sort(keys[nAdded+nRemoved:])

	// Each emitted item clones the path, so children may share this one.
	sub := append(path[:len(path):len(path)], "")
	for i, k := range keys {
		sub[len(sub)-1] = k
		switch {
		case i < nAdded:
			d = appendDiff(d, sub, nil, b[k])
		case i < nAdded+nRemoved:
			d = appendDiff(d, sub, a[k], nil)
		default:
			d = appendDiff(d, sub, a[k], b[k])
		}
	}
	return d
}

// Reduce narrows the diff to the field at path, for field handlers (compat:
// handlers-field): changes at or under the field keep their path relative to
// it; a change of an ancestor (the whole spec added, say) is diffed again
// between the ancestor's old and new values at the field; unrelated changes are
// dropped. An empty path returns the diff as it is.
func (d Diff) Reduce(path []string) Diff {
	if len(path) == 0 {
		return d
	}
	var out Diff
	for _, it := range d {
		switch {
		case hasPrefix(it.Path, path):
			out = append(out, Item{Op: it.Op, Path: it.Path[len(path):], Old: it.Old, New: it.New})
		case hasPrefix(path, it.Path):
			tail := path[len(it.Path):]
			oldTail, _ := dicts.Get(it.Old, tail)
			newTail, _ := dicts.Get(it.New, tail)
			out = appendDiff(out, nil, oldTail, newTail)
		}
	}
	return out
}

func hasPrefix(s, prefix []string) bool {
	return len(s) >= len(prefix) && slices.Equal(s[:len(prefix)], prefix)
}
