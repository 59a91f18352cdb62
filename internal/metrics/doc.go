// Package metrics exposes an operator's work as Prometheus metrics, named
// under kopfgo_ with their units as Prometheus' naming guide asks: handler
// invocations by handler id, cause and outcome, their durations, retries,
// objects in flight, watch events and restarts by resource, API request
// latency and results by verb (client-go's metrics hooks), daemons and
// timers running, Events posted, and the Go runtime's own metrics.
//
// The reactor reports through its Hooks at a few places; Metrics implements
// the reporting side. Every hot-path method is a map-free counter increment
// after the first call for a label set, so that metrics cost little per
// handled object (bench_test.go measures it).
package metrics
