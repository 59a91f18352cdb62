//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/cluster"
)

// BenchmarkAdmissionThroughAPIServer measures what a client sees: dry-run
// creations sent open-loop at 200 per second to the API server, which calls
// the operator's validating webhook over TLS for each (the "with webhook"
// metrics), beside the same requests for a resource without webhooks (the
// floor: what the API server costs alone). Each iteration is one request of
// each kind; -benchtime=2000x is 10 s of load per kind.
//
//	go test -tags e2e -run '^$' -bench AdmissionThroughAPIServer -benchtime 2000x ./e2e/
func BenchmarkAdmissionThroughAPIServer(b *testing.B) {
	shared := cluster.Shared(b)
	ctx := context.Background()
	cfg := shared.RESTConfig()
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttling: the load is paced here
	d := dynamic.NewForConfigOrDie(cfg)
	ns := fmt.Sprintf("bench-admission-%d", time.Now().UnixNano()%1e9)
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	stamp := time.Now().UnixNano() % 1e9
	hooked := schema.GroupVersionResource{Group: fmt.Sprintf("hooked%d.e2e.kopfgo.dev", stamp), Version: "v1", Resource: "gates"}
	floor := schema.GroupVersionResource{Group: fmt.Sprintf("floor%d.e2e.kopfgo.dev", stamp), Version: "v1", Resource: "gates"}
	for _, gvr := range []schema.GroupVersionResource{hooked, floor} {
		if err := shared.Apply(ctx, []byte(crdYAML(gvr.Group, "Gate", "gates"))); err != nil {
			b.Fatal(err)
		}
	}
	managed := fmt.Sprintf("b%d.auto.kopf.dev", stamp)
	opts := kopfgo.Options{RESTConfig: shared.RESTConfig(), Namespaces: []string{ns}, Logger: slog.New(slog.DiscardHandler)}
	opts.Settings.Admission = kopfgo.AdmissionSettings{Server: &kopfgo.WebhookServer{Addr: "127.0.0.1"}, Managed: managed}
	op := kopfgo.New(opts)
	op.On.Validate("gates."+hooked.Group, func(ctx context.Context, a *kopfgo.Admission) error {
		if a.Spec["field"] == "wrong" {
			return &kopfgo.AdmissionError{Message: "wrong", Code: 400}
		}
		return nil
	}, kopfgo.ID("check"))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- op.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
		for _, gvr := range []schema.GroupVersionResource{validatingGVR, mutatingGVR} {
			_ = d.Resource(gvr).Delete(ctx, managed, metav1.DeleteOptions{})
		}
	}()
	create := func(gvr schema.GroupVersionResource, field string) error {
		_, err := d.Resource(gvr).Namespace(ns).Create(ctx, gateObj(gvr, "probe", map[string]any{"field": field}, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	// Ready when the API server rejects through the webhook.
	deadline := time.Now().Add(waitLong)
	for create(hooked, "wrong") == nil {
		if time.Now().After(deadline) {
			b.Fatal("the webhook is never called")
		}
		time.Sleep(100 * time.Millisecond) // polling the API server's configuration cache
	}

	measure := func(gvr schema.GroupVersionResource) []time.Duration {
		lat := make([]time.Duration, b.N)
		var wg sync.WaitGroup
		const every = time.Second / 200
		start := time.Now()
		for i := range b.N {
			if d := time.Until(start.Add(time.Duration(i) * every)); d > 0 {
				time.Sleep(d) // pacing the load generator
			}
			wg.Go(func() {
				t0 := time.Now()
				obj := gateObj(gvr, fmt.Sprintf("g%d", i), map[string]any{"field": "fine"}, nil)
				if _, err := d.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
					b.Error(err)
				}
				lat[i] = time.Since(t0)
			})
		}
		wg.Wait()
		slices.Sort(lat)
		return lat
	}
	b.ResetTimer()
	withHook := measure(hooked)
	without := measure(floor)
	b.StopTimer()
	pct := func(lat []time.Duration, p float64) float64 {
		return float64(lat[min(len(lat)-1, int(float64(len(lat))*p))].Microseconds())
	}
	b.ReportMetric(pct(withHook, 0.50), "hooked-p50-µs")
	b.ReportMetric(pct(withHook, 0.99), "hooked-p99-µs")
	b.ReportMetric(pct(without, 0.50), "floor-p50-µs")
	b.ReportMetric(pct(without, 0.99), "floor-p99-µs")
}
