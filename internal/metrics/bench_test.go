package metrics

import (
	"testing"
	"time"
)

// The instrumented paths of one handled object: a watch event, the object
// in flight, one handler call. Compare with the handling's own cost
// (handlers' and reactor's benchmarks) for the overhead per object.
func BenchmarkPerObject(b *testing.B) {
	m := New()
	b.ReportAllocs()
	for b.Loop() {
		m.WatchEvent("kopfexamples.v1.kopf.dev", "MODIFIED")
		m.Busy(1)
		m.HandlerCalled("create_fn", "create", Success, 0, time.Millisecond)
		m.Busy(-1)
	}
}
