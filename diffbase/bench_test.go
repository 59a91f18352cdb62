package diffbase

import (
	"testing"

	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/patch"
)

// The executor runs Build, Fetch and Compute for every watch event of every
// object: these are the per-event costs.

func BenchmarkBuild(b *testing.B) {
	body := obj(b, realisticBody)
	extras := [][]string{{"status", "phase"}}
	for name, st := range map[string]Storage{
		"annotations": Default(),
		"status":      StatusStorage{},
		"multi":       MultiStorage{Storages: []Storage{StatusStorage{}, Default()}},
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				st.Build(body, nil)
			}
		})
		b.Run(name+"/extras", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				st.Build(body, extras)
			}
		})
	}
	// For scale: what a full deep copy of the body alone costs.
	b.Run("deepcopy-baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dicts.DeepCopyMap(body)
		}
	})
}

func BenchmarkFetch(b *testing.B) {
	body := obj(b, realisticBody)
	st := Default()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := st.Fetch(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStore(b *testing.B) {
	body := obj(b, realisticBody)
	st := Default()
	essence := st.Build(body, nil)
	b.Run("changed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p patch.Patch
			st.Store(body, &p, essence)
		}
	})
	var p patch.Patch
	st.Store(body, &p, essence)
	same := p.Apply(body)
	b.Run("unchanged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p patch.Patch
			st.Store(same, &p, essence)
		}
	})
}

func BenchmarkCompute(b *testing.B) {
	body := obj(b, realisticBody)
	st := Default()
	old := st.Build(body, nil)
	fetched, _ := st.Fetch(body) // a different essence: spec.replicas, labels.app, owner
	b.Run("equal", func(b *testing.B) {
		new := st.Build(body, nil)
		b.ReportAllocs()
		for b.Loop() {
			if d := Compute(old, new); len(d) != 0 {
				b.Fatal(d)
			}
		}
	})
	b.Run("changed", func(b *testing.B) {
		new := st.Build(body, nil)
		b.ReportAllocs()
		for b.Loop() {
			Compute(fetched, new)
		}
	})
	b.Run("created", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Compute(nil, old)
		}
	})
}

func BenchmarkReduce(b *testing.B) {
	body := obj(b, realisticBody)
	st := Default()
	fetched, _ := st.Fetch(body)
	new := st.Build(body, nil)
	d := Compute(fetched, new)
	creation := Compute(nil, new)
	b.Run("relative", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d.Reduce([]string{"metadata", "labels"})
		}
	})
	b.Run("ancestor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			creation.Reduce([]string{"spec", "field"})
		}
	})
}

// The whole per-event path of the executor on an unchanged object: fetch the
// stored essence, build the current one, diff them.
func BenchmarkEventNoop(b *testing.B) {
	body := obj(b, realisticBody)
	st := Default()
	var p patch.Patch
	st.Store(body, &p, st.Build(body, nil))
	body = p.Apply(body)
	b.ReportAllocs()
	for b.Loop() {
		old, _ := st.Fetch(body)
		new := st.Build(body, nil)
		if d := Compute(old, new); len(d) != 0 {
			b.Fatal(d)
		}
	}
}
