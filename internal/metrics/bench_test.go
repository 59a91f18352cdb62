package metrics

import (
	"testing"
	"time"
)

// The instrumented paths of one handled object: a watch event, the object
// in flight, one handler call. Compare with the handling's own cost
// (handlers' and reactor's benchmarks) for the overhead per object.
func BenchmarkPerObject(b *testing.B) {
	m := New(Options{})
	b.ReportAllocs()
	for b.Loop() {
		m.WatchEvent("kopfexamples.v1.kopf.dev", "MODIFIED")
		m.Busy(1)
		m.HandlerCalled(Call{Resource: "kopfexamples.v1.kopf.dev", Handler: "create_fn", Cause: "create", Outcome: Success}, time.Millisecond)
		m.Busy(-1)
	}
}
