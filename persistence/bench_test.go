package persistence

import (
	"testing"

	"github.com/kopfgo/kopfgo/patch"
)

func BenchmarkRecordEncode(b *testing.B) {
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = delayedRecord.appendJSON(buf[:0], false)
	}
}

func BenchmarkRecordMarshalJSON(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, _ = delayedRecord.MarshalJSON()
	}
}

func BenchmarkRecordDecode(b *testing.B) {
	data := []byte(delayedJSON)
	b.ReportAllocs()
	for b.Loop() {
		var r Record
		if err := r.UnmarshalJSON(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRecordFromStatusMap(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := recordFromMap(delayedStatus); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSmartFetchHit(b *testing.B) {
	s := Default()
	body := withAnnotations("kopf.zalando.org/create_fn", delayedJSON)
	b.ReportAllocs()
	for b.Loop() {
		if r, err := s.Fetch("create_fn", body); r == nil || err != nil {
			b.Fatal(r, err)
		}
	}
}

// The common case: a fresh object, no record in either storage.
func BenchmarkSmartFetchMiss(b *testing.B) {
	s := Default()
	body := withAnnotations("other", "x")
	b.ReportAllocs()
	for b.Loop() {
		if r, err := s.Fetch("create_fn", body); r != nil || err != nil {
			b.Fatal(r, err)
		}
	}
}

func BenchmarkSmartStore(b *testing.B) {
	s := Default()
	body := map[string]any{}
	b.ReportAllocs()
	for b.Loop() {
		var p patch.Patch
		s.Store("create_fn", &delayedRecord, body, &p)
	}
}

func BenchmarkSmartStoreLongID(b *testing.B) {
	s := Default()
	body := map[string]any{}
	b.ReportAllocs()
	for b.Loop() {
		var p patch.Patch
		s.Store(longID, &delayedRecord, body, &p)
	}
}

func BenchmarkSmartPurge(b *testing.B) {
	s := Default()
	body := withAnnotations("kopf.zalando.org/create_fn", delayedJSON)
	b.ReportAllocs()
	for b.Loop() {
		var p patch.Patch
		s.Purge("create_fn", body, &p)
	}
}

func BenchmarkSmartClear(b *testing.B) {
	s := Default()
	essence := map[string]any{
		"spec":     map[string]any{"a": 1},
		"metadata": map[string]any{"labels": map[string]any{"x": "y"}, "annotations": map[string]any{"kopf.zalando.org/create_fn": "{}", "user": "x"}},
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Clear(essence)
	}
}
