package indexing

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
)

// Index updates run in the informer's callback for every event of every indexed
// object; lookups run in handlers. (compat: indices-performance): updates and
// lookups cost the same whatever the index's size.

func keys(n int) []objectKey {
	out := make([]objectKey, n)
	for i := range out {
		out[i] = objectKey{Namespace: "ns", Name: fmt.Sprintf("pod-%d", i), UID: fmt.Sprintf("uid-%d", i)}
	}
	return out
}

// BenchmarkIndexReplace re-indexes objects of an index of the given size
// under 100 keys (say, pods by node), each event changing the value.
func BenchmarkIndexReplace(b *testing.B) {
	for _, size := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			ix := newIndex[string, int]()
			objs := keys(size)
			for i, o := range objs {
				ix.replace(o, map[string]int{fmt.Sprint("node-", i%100): i})
			}
			result := map[string]int{"node-7": 0}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				result["node-7"] = i
				ix.replace(objs[i%size], result)
				i++
			}
		})
	}
}

// BenchmarkIndexChurn adds and removes objects: a new object indexed, an
// old one deleted, the index's size steady.
func BenchmarkIndexChurn(b *testing.B) {
	for _, size := range []int{1_000, 100_000} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			ix := newIndex[string, string]()
			objs := keys(2 * size)
			for i := range size {
				ix.replace(objs[i], map[string]string{fmt.Sprint("node-", i%100): objs[i].Name})
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				in, out := objs[(size+i)%len(objs)], objs[i%len(objs)]
				ix.replace(in, map[string]string{fmt.Sprint("node-", i%100): in.Name})
				ix.discard(out)
				i++
			}
		})
	}
}

func BenchmarkIndexGet(b *testing.B) {
	ix := newIndex[string, string]()
	for i, o := range keys(10_000) {
		ix.replace(o, map[string]string{fmt.Sprint("parent-", i%1000): o.Name}) // 10 values per key
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(ix.Get("parent-7")) != 10 {
			b.Fatal("wrong values")
		}
	}
}

// BenchmarkIndexerObserve is the whole path of one event: the filters, the
// user's function, the update.
func BenchmarkIndexerObserve(b *testing.B) {
	_, ix, err := Register(&handling.Registry{}, "pods", func(ctx context.Context, o *handlers.Object) (map[string]string, error) {
		return map[string]string{o.Labels["parent"]: o.Name}, nil
	}, func(h *handling.Handler) {
		h.ID = "by_parent"
		h.Filters.AddLabels(map[string]any{"parent": handlers.Present})
	})
	if err != nil {
		b.Fatal(err)
	}
	body := map[string]any{"metadata": map[string]any{
		"name": "pod-1", "namespace": "ns", "uid": "uid-1",
		"labels": map[string]any{"parent": "kex-1", "app": "x"},
	}}
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		ix.Observe(context.Background(), Observation{Now: now, Cause: &handling.Cause{Body: body, Logger: log}})
	}
}
