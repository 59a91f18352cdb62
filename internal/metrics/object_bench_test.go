package metrics

import (
	"context"
	"net/url"
	"testing"
	"time"
)

// BenchmarkOneHandledObject makes the metric updates of one object handled
// by one create handler, as counted on /metrics after 50 such objects (make
// bench's workload): three watch events (ADDED, then MODIFIED for each of
// the two patches), two and a half passes (in flight ±1 and a queue wait
// each; every other object's later events coalesce), one handler call, and
// two API requests (latency and result each, through client-go's hooks).
// Its time over make bench's CPU per object is the metrics' share of it.
func BenchmarkOneHandledObject(b *testing.B) {
	m := New(Options{})
	ctx := context.Background()
	u := url.URL{Scheme: "https", Host: "127.0.0.1:6443", Path: "/apis/kopf.dev/v1/namespaces/default/kopfexamples/bench-00001"}
	const res = "kopfexamples.v1.kopf.dev"
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m.WatchEvent(res, "ADDED")
		m.WatchEvent(res, "MODIFIED")
		m.WatchEvent(res, "MODIFIED")
		passes := 2 + i%2 // 2.5 on average
		for range passes {
			m.Busy(1)
			m.QueueWait(3 * time.Millisecond)
			m.Busy(-1)
		}
		m.HandlerCalled(Call{Resource: res, Handler: "create_fn", Cause: "create", Outcome: Success}, 40*time.Microsecond)
		for range 2 {
			latencyAdapter{}.Observe(ctx, "PATCH", u, 12*time.Millisecond)
			resultAdapter{}.Increment(ctx, "200", "PATCH", "127.0.0.1:6443")
		}
		i++
	}
}
