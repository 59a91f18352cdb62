package unjson

import "hash/maphash"

// Object keys repeat: every object in a list or a watch stream has the same
// few hundred of them. Decoded objects are kept in caches for the
// operator's lifetime, so one allocation per distinct key (instead of one
// per occurrence) is much of the heap they hold.
//
// The tables are bounded because the input is not ours: a hostile or merely
// unusual stream (keys made of names or UIDs) must not grow them without
// limit.
const (
	// maxInternLen skips long keys: they are rarely repeated (fieldsV1
	// keys naming list items by value) and cost the most to keep.
	maxInternLen = 128
	// maxInternKeys bounds the key table. A list of one kind of object
	// needs a few hundred; the rest is room for several kinds per stream.
	maxInternKeys = 4096
)

// keys interns object keys. Lookups with a []byte key do not allocate.
type keys struct {
	m map[string]string
}

// reset empties a full table. It is called between values, never within
// one, so that within one value each distinct key is allocated once.
func (k *keys) reset() {
	if len(k.m) >= maxInternKeys {
		clear(k.m)
	}
}

func (k *keys) intern(b []byte) string {
	if len(b) > maxInternLen {
		return string(b)
	}
	if s, ok := k.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if k.m == nil {
		k.m = make(map[string]string, 256)
	}
	if len(k.m) < maxInternKeys {
		k.m[s] = s
	}
	return s
}

// Short string values repeat too ("True", "Ready", "v1", "Update",
// "FieldsV1", the manager's name, label values). Putting a string into an
// `any` costs a second allocation for its header; sharing one boxed,
// immutable string saves both. Unlike keys there is no promise here, so a
// small direct-mapped cache does: a colliding value replaces the older one,
// which bounds the memory and follows whatever the stream repeats now.
const (
	maxCachedValueLen = 32
	valueCacheSlots   = 1024 // a power of two
)

type valueCache struct {
	seed  maphash.Seed
	slots *[valueCacheSlots]cachedValue
}

type cachedValue struct {
	s string
	v any // s, boxed once
}

func (c *valueCache) box(b []byte) any {
	if len(b) > maxCachedValueLen || len(b) == 0 {
		return string(b)
	}
	if c.slots == nil {
		c.seed = maphash.MakeSeed()
		c.slots = new([valueCacheSlots]cachedValue)
	}
	e := &c.slots[maphash.Bytes(c.seed, b)&(valueCacheSlots-1)]
	if e.v != nil && e.s == string(b) {
		return e.v
	}
	s := string(b)
	e.s, e.v = s, s
	return e.v
}
