package causes

import (
	"testing"

	"github.com/kopfgo/kopfgo/patch"
)

func BenchmarkDetect(b *testing.B) {
	in := factors{deletion: "unset", finalizer: "mixed", diffbase: "equal", initial: false}.input(b)
	b.ReportAllocs()
	for b.Loop() {
		if Detect(in) != Noop {
			b.Fatal("not noop")
		}
	}
}

func BenchmarkAddFinalizer(b *testing.B) {
	body := bodyWith(false, []any{"a", "b"})
	b.ReportAllocs()
	for b.Loop() {
		var p patch.Patch
		AddFinalizer(body, &p, ourFinalizer)
	}
}
