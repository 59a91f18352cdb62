package kube

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/internal/unjson"
)

// decodeCompact is what a pass gets of a compact object.
func decodeCompact(t *testing.T, obj any) *unstructured.Unstructured {
	t.Helper()
	c, ok := obj.(*Compact)
	if !ok {
		t.Fatalf("%T is not compact", obj)
	}
	u, err := c.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if c.Namespace != u.GetNamespace() || c.Name != u.GetName() || c.UID != string(u.GetUID()) || c.ResourceVersion != u.GetResourceVersion() {
		t.Errorf("metadata kept = %q %q %q %q, the object's: %q %q %q %q", c.Namespace, c.Name, c.UID, c.ResourceVersion,
			u.GetNamespace(), u.GetName(), u.GetUID(), u.GetResourceVersion())
	}
	return u
}

// The compact list, decoded, is the raw client's list (itself the dynamic
// client's), with or without managedFields.
func TestCompactListDecodesToTheList(t *testing.T) {
	bodies := map[string]string{
		"built-in":                podList,
		"custom":                  `{"apiVersion":"kopf.dev/v1","kind":"KopfExampleList","metadata":{"resourceVersion":"3"},"items":[{"apiVersion":"kopf.dev/v1","kind":"KopfExample","metadata":{"name":"a","uid":"u\u00e9"},"spec":{"n":9007199254740993,"f":1e3,"s":"\u00e9\n"}}]}`,
		"empty":                   `{"apiVersion":"kopf.dev/v1","kind":"KopfExampleList","metadata":{"resourceVersion":"3"},"items":[]}`,
		"null items":              `{"apiVersion":"kopf.dev/v1","kind":"KopfExampleList","metadata":{"resourceVersion":"3"},"items":null}`,
		"items before the kind":   `{"items":[{"metadata":{"name":"p1"}},{"kind":"Pod","metadata":{"name":"p2"}}],"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"10"}}`,
		"spaces, fields anywhere": "{ \"kind\" : \"PodList\" , \"apiVersion\":\"v1\",\"metadata\":{},\"items\" : [ { \"metadata\" : { \"managedFields\" : [ {} ] , \"name\" : \"p1\" } , \"spec\" : { } } , {} ] }",
	}
	for name, body := range bodies {
		for _, drop := range []bool{false, true} {
			for _, compress := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s drop=%v compress=%v", name, drop, compress), func(t *testing.T) {
					cfg, _ := apiServer(t, response{code: 200, body: body})
					rc := newTestClient(t, cfg).watching.collection(pods, "ns1")
					rc.dropManagedFields = drop
					if compress {
						rc.codec = &codec{}
					}
					want, err := rc.List(context.Background(), metav1.ListOptions{})
					if err != nil {
						t.Fatal(err)
					}
					got, err := rc.ListCompact(context.Background(), metav1.ListOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if got.ResourceVersion != want.GetResourceVersion() || got.Continue != want.GetContinue() {
						t.Errorf("list metadata = %q %q, want %q %q", got.ResourceVersion, got.Continue, want.GetResourceVersion(), want.GetContinue())
					}
					if len(got.Items) != len(want.Items) {
						t.Fatalf("%d items, want %d", len(got.Items), len(want.Items))
					}
					for i := range got.Items {
						if u := decodeCompact(t, got.Items[i]); !reflect.DeepEqual(u.Object, want.Items[i].Object) {
							t.Errorf("item %d = %#v\nwant     %#v", i, u.Object, want.Items[i].Object)
						}
					}
				})
			}
		}
	}
}

// The compact stream, decoded, is the raw client's stream.
func TestCompactWatchDecodesToTheWatch(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("compress=%v", compress), func(t *testing.T) { testCompactWatch(t, compress) })
	}
}

func testCompactWatch(t *testing.T, compress bool) {
	stream := strings.Join([]string{kexAdded, kexModified, kexBookmark, kexDeleted, kexExpired}, "\n") + "\n"
	cfg, _ := apiServer(t, response{code: 200, body: stream})
	rc := newTestClient(t, cfg).watching.collection(kex, "ns1")
	rc.dropManagedFields = true
	if compress {
		rc.codec = &codec{}
	}
	w, err := rc.Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := drain(t, w)
	w, err = rc.WatchCompact(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := drain(t, w)
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Type != want[i].Type {
			t.Errorf("event %d is %s, want %s", i, got[i].Type, want[i].Type)
		}
		if got[i].Type == watch.Error {
			if g, w := asError(got[i].Object), asError(want[i].Object); g == nil || !reflect.DeepEqual(g, w) {
				t.Errorf("error event %d = %#v\nwant             %#v", i, g, w)
			}
			continue
		}
		wantU := want[i].Object.(*unstructured.Unstructured)
		DropManagedFields(wantU)
		if u := decodeCompact(t, got[i].Object); !reflect.DeepEqual(u.Object, wantU.Object) {
			t.Errorf("event %d = %#v\nwant       %#v", i, u.Object, wantU.Object)
		}
	}
	// The reflector reads a bookmark's annotations (watch lists).
	if a := got[2].Object.(*Compact).GetAnnotations(); a[metav1.InitialEventsAnnotationKey] != "true" {
		t.Errorf("bookmark annotations = %v", a)
	}
}

func TestCompactStreamReportsBrokenEvents(t *testing.T) {
	for name, body := range map[string]string{
		"object not an object": `{"type":"ADDED","object":[]}`,
		"broken object":        `{"type":"ADDED","object":{"metadata" 1}}`,
		"unknown type":         `{"type":"SOMETHING","object":{}}`,
	} {
		t.Run(name, func(t *testing.T) {
			cfg, _ := apiServer(t, response{code: 200, body: body})
			w, err := newTestClient(t, cfg).watching.collection(kex, "ns1").WatchCompact(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			evs := drain(t, w)
			if len(evs) != 1 || evs[0].Type != watch.Error {
				t.Fatalf("events = %v, want one error", evs)
			}
		})
	}
}

func TestNewCompactCutsManagedFieldsWherever(t *testing.T) {
	for name, in := range map[string]string{
		"first":   `{"metadata":{"managedFields":[{"a":"]}"}],"name":"x"},"spec":{}}`,
		"middle":  `{"metadata":{"name":"x", "managedFields" : [] ,"uid":"u"}}`,
		"last":    `{"metadata":{"name":"x","managedFields":[{"manager":"k"}]}}`,
		"only":    `{"metadata":{"managedFields":null},"kind":"K"}`,
		"escaped": `{"metadata":{"name":"x","managed\u0046ields":[1]}}`,
		"none":    `{"metadata":{"name":"x"}}`,
		"no meta": `{"spec":{"managedFields":[1]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			v, err := unjson.Unmarshal([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			want := &unstructured.Unstructured{Object: v.(map[string]any)}
			DropManagedFields(want)
			c, _, err := newCompact([]byte(in), compactOptions{dropManagedFields: true})
			if err != nil {
				t.Fatal(err)
			}
			if u := decodeCompact(t, c); !reflect.DeepEqual(u.Object, want.Object) {
				t.Errorf("%s → %s", in, c.data)
			}
		})
	}
}

// The informer keys and versions compact objects as decoded ones.
func TestCompactIsAnObjectForTheInformer(t *testing.T) {
	c, _, err := newCompact([]byte(`{"metadata":{"namespace":"ns1","name":"a","resourceVersion":"5","labels":{"x":"y"}}}`), compactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if key, err := cache.MetaNamespaceKeyFunc(c); err != nil || key != "ns1/a" {
		t.Errorf("key = %q, %v", key, err)
	}
	cp := c.DeepCopyObject().(*Compact)
	cp.SetLabels(map[string]string{"x": "z"})
	if c.GetLabels()["x"] != "y" || cp.GetLabels()["x"] != "z" || cp.GetResourceVersion() != "5" {
		t.Errorf("labels = %v and the copy's %v", c.GetLabels(), cp.GetLabels())
	}
}

// BenchmarkWatchCompact is BenchmarkWatch's raw stream kept compact, and
// BenchmarkDecodeCompact what a pass then pays per object.
func BenchmarkWatchCompact(b *testing.B) {
	const n = 1000
	var stream strings.Builder
	for i := range n {
		stream.WriteString(`{"type":"MODIFIED","object":` + benchObject(i) + "}\n")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, stream.String())
	}))
	defer srv.Close()
	c, err := NewClient(&rest.Config{Host: srv.URL, Transport: srv.Client().Transport}, ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	rc := c.watching.collection(kex, "bench")
	rc.dropManagedFields = true
	b.ReportAllocs()
	for b.Loop() {
		w, err := rc.WatchCompact(context.Background(), metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		for range w.ResultChan() {
			got++
		}
		if got != n {
			b.Fatalf("%d events", got)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/object")
}

func BenchmarkDecodeCompact(b *testing.B) {
	c, _, err := newCompact([]byte(benchObject(1)), compactOptions{dropManagedFields: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Decode(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvent is what one watch event costs, decoded (as the raw
// stream decodes it) or kept compact, without the HTTP around it.
func BenchmarkEvent(b *testing.B) {
	ev := []byte(`{"type":"MODIFIED","object":` + benchObject(1) + "}")
	b.Run("decoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, err := unjson.Unmarshal(ev)
			if err != nil {
				b.Fatal(err)
			}
			e, err := toEvent(v)
			if err != nil {
				b.Fatal(err)
			}
			DropManagedFields(e.Object)
		}
	})
	b.Run("compact", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := compactEvent(ev, compactOptions{dropManagedFields: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Objects of one resource compress against the first one to a fraction of
// their JSON, and come back as they were.
func TestCodecCompressesAgainstTheFirstObject(t *testing.T) {
	k := &codec{}
	total, compressed := 0, 0
	for i := range 100 {
		in := []byte(benchObject(i))
		c, _, err := newCompact(in, compactOptions{codec: k})
		if err != nil {
			t.Fatal(err)
		}
		if c.dec == nil {
			t.Fatal("not compressed")
		}
		out, err := c.JSON()
		if err != nil || string(out) != string(in) {
			t.Fatalf("decompressed %s (%v), want %s", out, err, in)
		}
		total, compressed = total+len(in), compressed+len(c.data)
	}
	if compressed*3 > total {
		t.Errorf("%d bytes compressed to %d, want at most a third", total, compressed)
	}
}

func BenchmarkCodec(b *testing.B) {
	k := &codec{}
	k.compress([]byte(benchObject(0)))
	in := []byte(benchObject(1))
	z, dec := k.compress(in)
	b.Run("compress", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			k.compress(in)
		}
	})
	b.Run("decompress", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decompress(dec, z); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(len(z)), "bytes")
}

// A first object too large to be the dictionary stays uncompressed, and
// the next smaller one becomes it.
func TestCodecTakesNoHugeDictionary(t *testing.T) {
	k := &codec{}
	huge := []byte(`{"metadata":{"name":"big"},"data":"` + strings.Repeat("x", maxDict) + `"}`)
	c, _, err := newCompact(huge, compactOptions{codec: k})
	if err != nil {
		t.Fatal(err)
	}
	if c.dec != nil {
		t.Error("the huge object is compressed, so it is the dictionary")
	}
	if c, _, err = newCompact([]byte(benchObject(1)), compactOptions{codec: k}); err != nil || c.dec == nil {
		t.Errorf("the next object is not compressed (%v)", err)
	}
	if c, _, err = newCompact(huge, compactOptions{codec: k}); err != nil || c.dec == nil {
		t.Errorf("once set up, a huge object is not compressed (%v)", err)
	}
	if u := decodeCompact(t, c); u.GetName() != "big" {
		t.Errorf("decoded %v", u)
	}
}

// kexJSON is a KopfExample as the API server sends it before it is handled,
// or after: with the diff-base, a handler's result and the conditions.
func kexJSON(i int, handled bool) []byte {
	uid := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(i)*2654435761, i*7919%65536, i%4096, (i*31)%4096, uint64(i)*0x9E3779B97F4A7C15>>16)
	meta := fmt.Sprintf(`{"name":"bench-%05d","namespace":"bench","uid":"%s","resourceVersion":"%d","generation":1,"creationTimestamp":"2026-11-26T12:%02d:%02dZ"`, i, uid, 100000+i*3, i/60%60, i%60)
	status := ""
	if handled {
		meta += `,"annotations":{"kopf.zalando.org/last-handled-configuration":"{\"spec\":{\"duration\":\"1m\",\"field\":\"value\",\"items\":[\"item1\",\"item2\"]}}\n"}`
		status = fmt.Sprintf(`,"status":{"create_fn":{"message":"hello world"},"conditions":[{"type":"Ready","status":"True","reason":"HandlersSucceeded","message":"Creation handled: 1 handler succeeded.","observedGeneration":1,"lastTransitionTime":"2026-11-26T12:%02d:%02dZ"}]}`, i/60%60, i%60)
	}
	return []byte(`{"apiVersion":"kopf.dev/v1","kind":"KopfExample","metadata":` + meta + `},"spec":{"duration":"1m","field":"value","items":["item1","item2"]}` + status + "}")
}

// An operator started on a backlog lists objects it has not handled yet,
// and each comes back handled: the codec learns the handled shape, so that
// they compress as well as the first object's shape did; the objects
// compressed with the first dictionary still decode.
func TestCodecLearnsTheHandledShape(t *testing.T) {
	k := &codec{}
	var kept []*Compact
	var raw []string
	add := func(in []byte) *Compact {
		c, _, err := newCompact(in, compactOptions{codec: k})
		if err != nil || c.dec == nil {
			t.Fatalf("not compressed (%v)", err)
		}
		kept, raw = append(kept, c), append(raw, string(in))
		return c
	}
	for i := range 100 {
		add(kexJSON(i, false))
	}
	total, compressed := 0, 0
	for i := range 1000 {
		in := kexJSON(i, true)
		c := add(in)
		if i >= 500 {
			total, compressed = total+len(in), compressed+len(c.data)
		}
	}
	t.Logf("handled objects: %d bytes compressed to %d", total, compressed)
	if compressed*8 > total {
		t.Errorf("handled objects: %d bytes compressed to %d, want at most an eighth", total, compressed)
	}
	for i, c := range kept {
		out, err := c.JSON()
		if err != nil || string(out) != raw[i] {
			t.Fatalf("object %d decompressed to %s (%v), want %s", i, out, err, raw[i])
		}
	}
}

// Objects that share little with each other make the codec learn only a
// few dictionaries, each no larger than maxDict, and every object decodes.
func TestCodecLearnsBoundedly(t *testing.T) {
	k := &codec{}
	rnd := rand.New(rand.NewPCG(1, 2))
	var kept []*Compact
	var raw []string
	for i := range 2000 {
		noise := make([]byte, 1500)
		for j := range noise {
			noise[j] = 'a' + byte(rnd.IntN(26))
		}
		in := []byte(fmt.Sprintf(`{"metadata":{"name":"n-%d"},"data":"%s"}`, i, noise))
		c, _, err := newCompact(in, compactOptions{codec: k})
		if err != nil {
			t.Fatal(err)
		}
		kept, raw = append(kept, c), append(raw, string(in))
	}
	z := k.ready.Load()
	if z.generation > maxGenerations || len(z.dict) > maxDict {
		t.Errorf("generation %d with a dictionary of %d bytes, want at most %d and %d", z.generation, len(z.dict), maxGenerations, maxDict)
	}
	if z.generation < 2 {
		t.Errorf("generation %d: the codec never learned", z.generation)
	}
	for i, c := range kept {
		if out, err := c.JSON(); err != nil || string(out) != raw[i] {
			t.Fatalf("object %d decompressed to %.80s (%v)", i, out, err)
		}
	}
}

// The lists and watches of one resource compress with one codec, whatever
// their namespace or label selector (a namespace or a shard watched apart):
// the objects of the second list compress against the first list's
// dictionary, and decode with its decoder. Another resource has its own.
func TestListWatchesOfAResourceShareItsCodec(t *testing.T) {
	cfg, _ := apiServer(t, response{code: 200, body: podList})
	c := newTestClient(t, cfg)
	nodes := resources.Resource{Version: "v1", Plural: "nodes", Kind: "Node"}
	decoders := func(lw *cache.ListWatch) []*zstd.Decoder {
		t.Helper()
		obj, err := lw.ListWithContextFunc(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var out []*zstd.Decoder
		for _, item := range obj.(*CompactList).Items {
			if item.dec == nil {
				t.Fatalf("%s is not compressed", item.Name)
			}
			out = append(out, item.dec)
		}
		return out
	}
	first := decoders(c.ListWatch(pods, "ns1", WatchOptions{Compact: true}))
	shard := decoders(c.ListWatch(pods, "ns2", WatchOptions{Compact: true, LabelSelector: "shard in (3)"}))
	other := decoders(c.ListWatch(nodes, "", WatchOptions{Compact: true}))
	for i := range shard {
		if shard[i] != first[0] {
			t.Errorf("item %d of another namespace's shard decodes with a codec of its own, not the resource's", i)
		}
	}
	if other[0] == first[0] {
		t.Error("another resource's objects decode with the pods' codec")
	}
}
