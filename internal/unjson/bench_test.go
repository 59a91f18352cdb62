package unjson

import (
	"bytes"
	"io"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	restwatch "k8s.io/client-go/rest/watch"
	kjson "sigs.k8s.io/json"
)

// The benchmarks compare this package with sigs.k8s.io/json (what the
// unstructured codecs call) and with the whole of what the dynamic client
// does today for the same bytes.

func BenchmarkObject(b *testing.B) { benchmarkValue(b, exampleObject()) }

func BenchmarkList(b *testing.B) { benchmarkValue(b, exampleList(1000)) }

func benchmarkValue(b *testing.B, data []byte) {
	b.Run("unjson", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Unmarshal(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sigs", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			var v any
			if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The dynamic client decodes a get's or a list's body so.
	b.Run("client-go", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := apiruntime.Decode(unstructured.UnstructuredJSONScheme, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkWatch(b *testing.B) {
	const events = 1000
	stream := exampleStream(events)
	b.Run("unjson", func(b *testing.B) {
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		for b.Loop() {
			d := NewDecoder(bytes.NewReader(stream))
			drain(b, events, func() error { _, err := d.Decode(); return err })
		}
	})
	b.Run("sigs", func(b *testing.B) {
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		for b.Loop() {
			d := kjson.NewDecoderCaseSensitivePreserveInts(bytes.NewReader(stream))
			drain(b, events, func() error { var v any; return d.Decode(&v) })
		}
	})
	b.Run("client-go", func(b *testing.B) {
		// The decoders the dynamic client's watch builds (rest.Request's
		// newStreamWatcher), from the serializers of its configuration.
		cfg := dynamic.ConfigFor(&rest.Config{})
		negotiator := apiruntime.NewClientNegotiator(cfg.NegotiatedSerializer, schema.GroupVersion{})
		objectDecoder, streamDecoder, framer, err := negotiator.StreamDecoder("application/json", nil)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		for b.Loop() {
			frames := framer.NewFrameReader(io.NopCloser(bytes.NewReader(stream)))
			d := restwatch.NewDecoder(streaming.NewDecoder(frames, streamDecoder), objectDecoder)
			drain(b, events, func() error { _, _, err := d.Decode(); return err })
		}
	})
}

// drain decodes values with next until io.EOF and checks how many there were.
func drain(b *testing.B, want int, next func() error) {
	n := 0
	for {
		if err := next(); err == io.EOF {
			break
		} else if err != nil {
			b.Fatal(err)
		}
		n++
	}
	if n != want {
		b.Fatalf("%d values, want %d", n, want)
	}
}

// BenchmarkRetained measures the heap that 10 000 decoded objects keep,
// as an informer's cache keeps them: decoded from a watch stream, each
// event's object held.
func BenchmarkRetained(b *testing.B) {
	const objects = 10000
	stream := exampleStream(objects)
	measure := func(b *testing.B, decode func() []any) {
		var total int64
		for b.Loop() {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			kept := decode()
			runtime.GC()
			runtime.ReadMemStats(&after)
			total += int64(after.HeapAlloc) - int64(before.HeapAlloc)
			runtime.KeepAlive(kept)
		}
		perRun := float64(total) / float64(b.N)
		b.ReportMetric(perRun/(1<<20), "MB/10k-objects")
		b.ReportMetric(perRun/objects, "B/object")
	}
	b.Run("unjson", func(b *testing.B) {
		measure(b, func() []any {
			kept := make([]any, 0, objects)
			d := NewDecoder(bytes.NewReader(stream))
			for {
				v, err := d.Decode()
				if err == io.EOF {
					return kept
				} else if err != nil {
					b.Fatal(err)
				}
				kept = append(kept, v.(map[string]any)["object"])
			}
		})
	})
	b.Run("sigs", func(b *testing.B) {
		measure(b, func() []any {
			kept := make([]any, 0, objects)
			d := kjson.NewDecoderCaseSensitivePreserveInts(bytes.NewReader(stream))
			for {
				var v any
				if err := d.Decode(&v); err == io.EOF {
					return kept
				} else if err != nil {
					b.Fatal(err)
				}
				kept = append(kept, v.(map[string]any)["object"])
			}
		})
	})
}
