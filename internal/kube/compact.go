package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unique"

	"github.com/klauspost/compress/zstd"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kopfgo/kopfgo/internal/unjson"
)

// Compact is one listed or watched object kept as its JSON (without
// metadata.managedFields unless they are kept), with the few metadata
// fields that the informer's store and the reactor read on every
// observation. Decoded, an object takes several times the memory of its
// JSON (a map per nested object, a string header per value), and an
// informer holds every object of its resource, so watchers keep objects
// compact and decode one when it is used (see WatchOptions.Compact).
//
// A Compact in an informer's store is never changed: its JSON is shared by
// its copies. Its setters (metav1.Object) decode, change and encode again;
// nothing on the watching path calls them.
type Compact struct {
	// data is the object's JSON, as the API server sent it (with the kind
	// and apiVersion of a built-in resource's list filled in), compressed
	// if dec is set, which decompresses it (codec). Never modified.
	data []byte
	dec  *zstd.Decoder

	Namespace, Name, UID, ResourceVersion string
}

// Decode returns the object decoded, as the API server sent it: a new map
// each time, the caller's to change.
func (c *Compact) Decode() (*unstructured.Unstructured, error) {
	data := c.data
	if c.dec != nil {
		// Decompressed into scratch: the decoded object never refers to
		// the bytes it was decoded from.
		buf := scratch.Get().(*[]byte)
		defer scratch.Put(buf)
		var err error
		if data, err = decompressTo(c.dec, (*buf)[:0], c.data); err != nil {
			return nil, fmt.Errorf("cannot decode %s/%s: %w", c.Namespace, c.Name, err)
		}
		*buf = data
	}
	v, err := unjson.Unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("cannot decode %s/%s: %w", c.Namespace, c.Name, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("cannot decode %s/%s: it is %T, not an object", c.Namespace, c.Name, v)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// JSON is the object's JSON.
func (c *Compact) JSON() ([]byte, error) {
	if c.dec == nil {
		return c.data, nil
	}
	return decompress(c.dec, c.data)
}

// errNotObject: a listed or watched value that is not a JSON object.
var errNotObject = errors.New("not an object")

// errEnough stops a walk over an object once what is needed is read.
var errEnough = errors.New("enough")

// compactOptions say how NewCompact treats an object.
type compactOptions struct {
	// dropManagedFields cuts metadata.managedFields out of the JSON.
	dropManagedFields bool
	// kind and apiVersion are given to an object that has neither (the
	// items of a built-in resource's list), as fillItemKinds does.
	kind, apiVersion string
	// codec, when set, compresses the JSON of named objects (not that of
	// bookmarks).
	codec *codec
}

// newCompact reads an object's JSON (whose bytes it copies: data may be a
// decoder's buffer) into a Compact.
func newCompact(data []byte, o compactOptions) (c *Compact, hasKind bool, err error) {
	c = &Compact{}
	var cut [2]int // the bytes of managedFields (and a comma) to cut
	hasMeta := false
	_, err = unjson.Members(data, func(m unjson.Member) error {
		switch string(m.Key) {
		case "kind", "apiVersion":
			hasKind = true
		case "metadata":
			hasMeta = true
			if err := c.readMetadata(data, m, o.dropManagedFields, &cut); err != nil {
				return err
			}
		}
		if hasKind && hasMeta {
			// The rest (spec, status) is framed already: not scanned again.
			return errEnough
		}
		return nil
	})
	if err != nil && err != errEnough {
		return nil, false, err
	}
	var prefix string
	if !hasKind && o.kind != "" {
		k, _ := json.Marshal(o.kind)
		a, _ := json.Marshal(o.apiVersion)
		prefix = `"kind":` + string(k) + `,"apiVersion":` + string(a)
	}
	// data is one framed object: it begins with its brace.
	out := make([]byte, 0, len(data)-(cut[1]-cut[0])+len(prefix)+1)
	out = append(out, '{')
	if prefix != "" {
		out = append(out, prefix...)
		if i := skipSpace(data, 1); i < len(data) && data[i] != '}' {
			out = append(out, ',')
		}
	}
	if cut[1] > cut[0] {
		out = append(out, data[1:cut[0]]...)
		out = append(out, data[cut[1]:]...)
	} else {
		out = append(out, data[1:]...)
	}
	c.data = out
	if o.codec != nil && c.Name != "" {
		if z, dec := o.codec.compress(out); z != nil {
			c.data, c.dec = z, dec
		}
	}
	return c, hasKind, nil
}

// readMetadata reads the metadata member m of an object (in data), and
// finds the bytes that remove managedFields when dropped.
func (c *Compact) readMetadata(data []byte, m unjson.Member, drop bool, cut *[2]int) error {
	if data[m.ValueStart] != '{' {
		return nil // null, or not an object: nothing to read
	}
	prevEnd := -1
	pending := false // managedFields was the last member so far
	var mf unjson.Member
	_, err := unjson.Members(data[m.ValueStart:m.ValueEnd], func(f unjson.Member) error {
		f.KeyStart += m.ValueStart
		f.ValueStart += m.ValueStart
		f.ValueEnd += m.ValueStart
		if pending {
			// managedFields and the separator after it, up to this key.
			cut[0], cut[1] = mf.KeyStart, f.KeyStart
			pending = false
		}
		v := data[f.ValueStart:f.ValueEnd]
		switch string(f.Key) {
		case "namespace":
			ns, _ := unjson.String(v)
			c.Namespace = namespaceOf(ns)
		case "name":
			c.Name, _ = unjson.String(v)
		case "uid":
			c.UID, _ = unjson.String(v)
		case "resourceVersion":
			c.ResourceVersion, _ = unjson.String(v)
		case "managedFields":
			if drop {
				mf = f
				pending = true
				if prevEnd >= 0 {
					// The last member: cut the separator before it.
					cut[0], cut[1] = prevEnd, f.ValueEnd
				} else {
					cut[0], cut[1] = f.KeyStart, f.ValueEnd
				}
			}
		}
		prevEnd = f.ValueEnd
		return nil
	})
	return err
}

// namespaceOf is ns interned: the objects of a namespace share one copy
// of its name rather than keep one each.
func namespaceOf(ns string) string { return unique.Make(ns).Value() }

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// CompactOf makes a Compact of a decoded object, without its managedFields
// if drop: what a watcher's store holds, for tests that put objects there
// directly. Lists and watches make theirs from the JSON as it arrives.
func CompactOf(u *unstructured.Unstructured, drop bool) (*Compact, error) {
	if drop {
		DropManagedFields(u)
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("cannot encode %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return &Compact{
		data: data, Namespace: namespaceOf(u.GetNamespace()), Name: u.GetName(),
		UID: string(u.GetUID()), ResourceVersion: u.GetResourceVersion(),
	}, nil
}

// CompactList is a listing of compact objects, for the informer.
type CompactList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []*Compact
}

// DeepCopyObject shares the items, which are immutable.
func (l *CompactList) DeepCopyObject() runtime.Object {
	out := *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = append([]*Compact(nil), l.Items...)
	return &out
}

// GetObjectKind: a Compact's kind is in its JSON; the informer never asks.
func (c *Compact) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject shares the JSON, which is immutable.
func (c *Compact) DeepCopyObject() runtime.Object {
	out := *c
	return &out
}

// The metav1.Object interface, for the informer (keys and versions) and
// for client-go's reflector (the annotations of a bookmark). The fields a
// Compact does not keep are read from its JSON.

func (c *Compact) GetNamespace() string { return c.Namespace }
func (c *Compact) SetNamespace(ns string) {
	c.Namespace = ns
	c.edit(func(u *unstructured.Unstructured) { u.SetNamespace(ns) })
}
func (c *Compact) GetName() string { return c.Name }
func (c *Compact) SetName(name string) {
	c.Name = name
	c.edit(func(u *unstructured.Unstructured) { u.SetName(name) })
}
func (c *Compact) GetUID() types.UID { return types.UID(c.UID) }
func (c *Compact) SetUID(uid types.UID) {
	c.UID = string(uid)
	c.edit(func(u *unstructured.Unstructured) { u.SetUID(uid) })
}
func (c *Compact) GetResourceVersion() string { return c.ResourceVersion }
func (c *Compact) SetResourceVersion(rv string) {
	c.ResourceVersion = rv
	c.edit(func(u *unstructured.Unstructured) { u.SetResourceVersion(rv) })
}
func (c *Compact) GetGenerateName() string { return c.decoded().GetGenerateName() }
func (c *Compact) SetGenerateName(n string) {
	c.edit(func(u *unstructured.Unstructured) { u.SetGenerateName(n) })
}
func (c *Compact) GetGeneration() int64 { return c.decoded().GetGeneration() }
func (c *Compact) SetGeneration(g int64) {
	c.edit(func(u *unstructured.Unstructured) { u.SetGeneration(g) })
}
func (c *Compact) GetSelfLink() string { return c.decoded().GetSelfLink() }
func (c *Compact) SetSelfLink(l string) {
	c.edit(func(u *unstructured.Unstructured) { u.SetSelfLink(l) })
}
func (c *Compact) GetCreationTimestamp() metav1.Time { return c.decoded().GetCreationTimestamp() }
func (c *Compact) SetCreationTimestamp(t metav1.Time) {
	c.edit(func(u *unstructured.Unstructured) { u.SetCreationTimestamp(t) })
}
func (c *Compact) GetDeletionTimestamp() *metav1.Time { return c.decoded().GetDeletionTimestamp() }
func (c *Compact) SetDeletionTimestamp(t *metav1.Time) {
	c.edit(func(u *unstructured.Unstructured) { u.SetDeletionTimestamp(t) })
}
func (c *Compact) GetDeletionGracePeriodSeconds() *int64 {
	return c.decoded().GetDeletionGracePeriodSeconds()
}
func (c *Compact) SetDeletionGracePeriodSeconds(s *int64) {
	c.edit(func(u *unstructured.Unstructured) { u.SetDeletionGracePeriodSeconds(s) })
}
func (c *Compact) GetLabels() map[string]string { return c.decoded().GetLabels() }
func (c *Compact) SetLabels(l map[string]string) {
	c.edit(func(u *unstructured.Unstructured) { u.SetLabels(l) })
}
func (c *Compact) GetAnnotations() map[string]string { return c.decoded().GetAnnotations() }
func (c *Compact) SetAnnotations(a map[string]string) {
	c.edit(func(u *unstructured.Unstructured) { u.SetAnnotations(a) })
}
func (c *Compact) GetFinalizers() []string { return c.decoded().GetFinalizers() }
func (c *Compact) SetFinalizers(f []string) {
	c.edit(func(u *unstructured.Unstructured) { u.SetFinalizers(f) })
}
func (c *Compact) GetOwnerReferences() []metav1.OwnerReference {
	return c.decoded().GetOwnerReferences()
}
func (c *Compact) SetOwnerReferences(r []metav1.OwnerReference) {
	c.edit(func(u *unstructured.Unstructured) { u.SetOwnerReferences(r) })
}
func (c *Compact) GetManagedFields() []metav1.ManagedFieldsEntry {
	return c.decoded().GetManagedFields()
}
func (c *Compact) SetManagedFields(f []metav1.ManagedFieldsEntry) {
	c.edit(func(u *unstructured.Unstructured) { u.SetManagedFields(f) })
}

// decoded is the object decoded, or an empty one if its JSON is broken
// (the getters of metav1.Object have no way to report it).
func (c *Compact) decoded() *unstructured.Unstructured {
	u, err := c.Decode()
	if err != nil {
		return &unstructured.Unstructured{Object: map[string]any{}}
	}
	return u
}

// edit changes the object and keeps the result as its JSON.
func (c *Compact) edit(change func(u *unstructured.Unstructured)) {
	u := c.decoded()
	change(u)
	if data, err := json.Marshal(u.Object); err == nil {
		c.data, c.dec = data, nil
	}
}

var _ metav1.Object = (*Compact)(nil)

// ListCompact is List keeping each item compact: its JSON is copied out of
// the response as it arrives, never decoded.
func (c rawCollection) ListCompact(ctx context.Context, opts metav1.ListOptions) (*CompactList, error) {
	body, err := c.request(&opts).Stream(ctx)
	if err != nil {
		return nil, err // a refusal by the API server is its StatusError
	}
	defer func() { _ = body.Close() }()
	list := &CompactList{Items: []*Compact{}}
	var kindless []int // items without kind and apiVersion
	o := compactOptions{dropManagedFields: c.dropManagedFields, codec: c.codec}
	dec := unjson.NewDecoder(body)
	rest, err := dec.DecodeStreamingRaw("items", func(b []byte) error {
		item, hasKind, err := newCompact(b, o)
		if err != nil {
			return fmt.Errorf("item %d: %w", len(list.Items), err)
		}
		if !hasKind {
			kindless = append(kindless, len(list.Items))
		}
		list.Items = append(list.Items, item)
		return nil
	})
	if err == nil {
		err = endOfList(dec)
	}
	if err == nil {
		err = fillCompactKinds(list, rest, kindless, o)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the list of %s: %w", c.res, err)
	}
	return list, nil
}

// fillCompactKinds is fillItemKinds for compact items, and reads the
// list's metadata.
func fillCompactKinds(list *CompactList, rest map[string]any, kindless []int, o compactOptions) error {
	u := &unstructured.UnstructuredList{Object: rest}
	list.ResourceVersion = u.GetResourceVersion()
	list.Continue = u.GetContinue()
	list.RemainingItemCount = u.GetRemainingItemCount()
	apiVersion, _ := rest["apiVersion"].(string)
	kind, _ := rest["kind"].(string)
	list.APIVersion, list.Kind = apiVersion, kind
	kind = strings.TrimSuffix(kind, "List")
	if kind == "" {
		return nil
	}
	for _, i := range kindless {
		data, err := list.Items[i].JSON()
		if err != nil {
			return err
		}
		o.kind, o.apiVersion, o.dropManagedFields = kind, apiVersion, false
		if list.Items[i], _, err = newCompact(data, o); err != nil {
			return err
		}
	}
	return nil
}

// WatchCompact is Watch with each event's object compact.
func (c rawCollection) WatchCompact(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	body, err := c.request(&opts).Stream(ctx)
	if err != nil {
		return nil, err
	}
	s := newRawStreamOf(body)
	s.compact = &compactOptions{dropManagedFields: c.dropManagedFields, codec: c.codec}
	go s.run(ctx)
	return s, nil
}

// compactEvent reads one event, {"type": ..., "object": {...}}, keeping
// its object compact (a Status, for an ERROR event, is decoded as toEvent
// decodes it).
func compactEvent(data []byte, o compactOptions) (watch.Event, error) {
	var typ string
	var obj []byte
	_, err := unjson.Members(data, func(m unjson.Member) error {
		switch string(m.Key) {
		case "type":
			typ, _ = unjson.String(data[m.ValueStart:m.ValueEnd])
		case "object":
			obj = data[m.ValueStart:m.ValueEnd]
		}
		return nil
	})
	if err != nil {
		return watch.Event{}, err
	}
	switch t := watch.EventType(typ); t {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		if len(obj) == 0 || obj[0] != '{' {
			return watch.Event{}, fmt.Errorf("the %q event's object is %w", typ, errNotObject)
		}
		c, _, err := newCompact(obj, o)
		if err != nil {
			return watch.Event{}, err
		}
		return watch.Event{Type: t, Object: c}, nil
	default:
		v, err := unjson.Unmarshal(data)
		if err != nil {
			return watch.Event{}, err
		}
		return toEvent(v)
	}
}

// codec compresses the JSON of the compact objects of one ListWatch with
// zstd against a raw dictionary: objects of its resource. The objects of
// one resource share most of their keys and many of their values
// (apiVersion, kind, namespace, annotation keys, the shape of spec and
// status), so against one of them a typical object of 600–700 bytes
// becomes one of a few dozen to a couple of hundred, for about 3 µs per
// compression and 1 µs per decompression (BenchmarkCodec); a pass spends
// several times that decoding the object anyway.
//
// The dictionary starts as the first named object. That one is often of a
// shape the others soon leave: an operator started on a backlog lists
// objects it has not handled yet, and each comes back with the diff-base
// annotation, the handlers' results and the conditions, which the first
// object lacks. Against it a handled object keeps three to five times the
// bytes it keeps against a handled one (TestCodecLearnsTheHandledShape:
// at 10 000 objects, megabytes). So the codec learns: once objects have
// compressed poorly for a while, the last of them joins the dictionary,
// and the objects compressed from then on use the new one. A Compact keeps
// the decoder of its own dictionary, so the older objects still decode;
// an older dictionary is dropped when the last object compressed with it
// has been replaced. The generations are few (maxGenerations) and the
// dictionary small (maxDict), so a resource whose objects share little
// stops learning soon.
//
// About a third of a compression is the encoder starting the frame from the
// dictionary (klauspost's fastEncoderDict.Reset copies back the shards of
// its 32K-entry hash table that the previous object changed, or all 256 KB
// of it), a quarter building the frame's FSE tables. Both are the price of
// frames that decode alone: no option of the library spares them, and
// encoders per goroutine or in a sync.Pool would not either, while holding
// over 0.5 MB of tables each.
type codec struct {
	mu    sync.Mutex
	ready atomic.Pointer[zcodec]
	// poor counts the objects compressed poorly against the current
	// dictionary (guarded by mu only when it reaches learnAfter).
	poor atomic.Int32
}

// zcodec is one generation of a codec: its dictionary, and the encoder and
// decoder made with it.
type zcodec struct {
	dict       []byte
	enc        *zstd.Encoder
	dec        *zstd.Decoder
	generation int
}

// window bounds what the encoder looks back at: an object and the
// dictionary, which are far smaller; a small window keeps its tables small.
const window = 1 << 17

// maxDict: a larger first object is no dictionary (it would be held for
// the client's lifetime); objects stay uncompressed until a smaller one
// comes. A dictionary grows by learning only up to this size too.
const maxDict = 32 << 10

// maxGenerations bounds the dictionaries a codec makes: the first, and
// the shapes it learns later (TestCodecLearnsBoundedly).
const maxGenerations = 4

// learnAfter is how many poorly compressed objects make the codec learn:
// more than an odd one (a long error message in one object's status), few
// enough that a backlog of thousands learns within its first objects.
const learnAfter = 32

// poorly tells a compression worth learning from: over a quarter of the
// JSON kept. Against a dictionary of their shape, objects keep a tenth or
// less; against one of another shape, a third or more.
func poorly(compressed, raw int) bool { return compressed*4 > raw }

// decoders bounds the decompressions that run at once: each decoder keeps
// its buffers, and a watcher rarely runs more passes at once than this.
var decoders = min(goruntime.GOMAXPROCS(0), 4)

// compress returns data compressed, in a new slice of its own, and the
// decoder that restores it, or nil if the codec is not set up and data is
// no dictionary (then the caller keeps data as it is).
func (k *codec) compress(data []byte) ([]byte, *zstd.Decoder) {
	z := k.ready.Load()
	if z == nil {
		if len(data) > maxDict {
			return nil, nil
		}
		z = k.setUp(nil, data, 1)
		if z == nil {
			return nil, nil
		}
	}
	c := z.encode(data)
	if poorly(len(c), len(data)) && z.generation < maxGenerations && k.poor.Add(1) >= learnAfter {
		if n := k.learn(z, data); n != nil {
			z, c = n, n.encode(data)
		}
	}
	return c, z.dec
}

// encode compresses data into a new slice of its own.
func (z *zcodec) encode(data []byte) []byte {
	buf := scratch.Get().(*[]byte)
	out := z.enc.EncodeAll(data, (*buf)[:0])
	c := make([]byte, len(out))
	copy(c, out)
	*buf = out
	scratch.Put(buf)
	return c
}

// learn makes the next generation, whose dictionary is z's with data
// after it, unless another call has or the dictionary would be too large.
func (k *codec) learn(z *zcodec, data []byte) *zcodec {
	if len(z.dict)+len(data) > maxDict {
		return nil
	}
	return k.setUp(z, data, z.generation+1)
}

var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// decompress returns what compress was given, with the decoder it
// returned.
func decompress(dec *zstd.Decoder, data []byte) ([]byte, error) { return decompressTo(dec, nil, data) }

// decompressTo appends what compress was given to dst.
func decompressTo(dec *zstd.Decoder, dst, data []byte) ([]byte, error) {
	out, err := dec.DecodeAll(data, dst)
	if err != nil {
		return nil, fmt.Errorf("cannot decompress: %w", err)
	}
	return out, nil
}

// setUp makes the generation after prev (nil: the first) with prev's
// dictionary and data (copied) as its dictionary, unless another call has
// made that generation or a later one, which it then returns.
func (k *codec) setUp(prev *zcodec, data []byte, generation int) *zcodec {
	k.mu.Lock()
	defer k.mu.Unlock()
	if z := k.ready.Load(); z != nil && z.generation >= generation {
		return z
	}
	var dict []byte
	if prev != nil {
		dict = append(dict, prev.dict...)
	}
	dict = append(dict, data...)
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderDictRaw(1, dict),
		zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true), zstd.WithWindowSize(window), zstd.WithEncoderCRC(false))
	if err != nil {
		return nil
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderDictRaw(1, dict), zstd.WithDecoderConcurrency(decoders), zstd.WithDecoderLowmem(true))
	if err != nil {
		return nil
	}
	z := &zcodec{dict: dict, enc: enc, dec: dec, generation: generation}
	k.ready.Store(z)
	k.poor.Store(0)
	return z
}
