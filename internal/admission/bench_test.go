package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/logging"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// BenchmarkValidatingCallAt200RPS measures what the API server waits for
// when it calls a validating webhook: an AdmissionReview POSTed over TLS
// (kept-alive connections, as the API server keeps them) to the webhook
// server, decoded, run through two validating handlers and answered.
// Requests go out open-loop at 200 per second, whatever the answers do;
// each iteration is one request, so -benchtime=2000x is 10 s of load. It
// reports the latency's p50, p99 and max in microseconds.
//
//	go test -run '^$' -bench ValidatingCallAt200RPS -benchtime 2000x ./internal/admission
func BenchmarkValidatingCallAt200RPS(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	check := func(ctx context.Context, a *handlers.Admission) error {
		if a.Spec["field"] == "wrong" {
			return &handlers.AdmissionError{Message: "wrong", Code: 400}
		}
		return nil
	}
	var reg handling.Registry
	for _, id := range []string{"check1", "check2"} {
		reg.AddAdmission(handling.AdmissionRegistration{Resource: "kex", Kind: handlers.Validating, Fn: check,
			Configure: func(h *handling.AdmissionHandler) { h.ID = id }})
	}
	e := engine(reg.Admissions()...)
	srv := &Server{Config: config.WebhookServer{Addr: "127.0.0.1"}, Listener: ln, Logger: slog.New(slog.DiscardHandler), Handler: e}
	cc, pool := serve(b, srv)
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 64,
	}}
	body := reviewJSON("UPDATE", obj, false)
	url := cc.URL + "/check1"

	latencies := make([]time.Duration, b.N)
	var wg sync.WaitGroup
	const every = time.Second / 200
	// An open loop: requests leave on the ticker's beat whether or not
	// earlier ones have been answered.
	pace := time.NewTicker(every)
	defer pace.Stop()
	b.ResetTimer()
	for i := range b.N {
		<-pace.C
		wg.Go(func() {
			t0 := time.Now()
			resp, err := client.Post(url, "application/json", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			latencies[i] = time.Since(t0)
		})
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latencies[min(len(latencies)-1, int(float64(len(latencies))*p))].Microseconds())
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(float64(latencies[len(latencies)-1].Microseconds()), "max-µs")
}

// shardLabelReview is the AdmissionReview the API server sends the shard
// label's webhook for the scale-out bench's object: a kopfexample without
// labels as it is at admission (uid, creation time, the managed fields of
// its creation), with the request's user, kinds and options.
func shardLabelReview(name string) []byte {
	spec := map[string]any{"duration": "1m", "field": "value", "items": []any{"item1", "item2"}}
	object := map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{
			"name": name, "namespace": "bench-scaleout-kopfgo", "uid": "5f0c2d1e-8a3b-4c6d-9e7f-0a1b2c3d4e5f",
			"creationTimestamp": "2026-11-26T10:00:00Z", "generation": 1,
			"managedFields": []any{map[string]any{
				"apiVersion": "kopf.dev/v1", "fieldsType": "FieldsV1", "manager": "bench", "operation": "Update",
				"time": "2026-11-26T10:00:00Z",
				"fieldsV1": map[string]any{"f:spec": map[string]any{
					".": map[string]any{}, "f:duration": map[string]any{}, "f:field": map[string]any{}, "f:items": map[string]any{},
				}},
			}},
		},
		"spec": spec,
	}
	gvk := map[string]any{"group": "kopf.dev", "version": "v1", "kind": "KopfExample"}
	gvr := map[string]any{"group": "kopf.dev", "version": "v1", "resource": "kopfexamples"}
	data, err := json.Marshal(map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{
			"uid": "0d9e7a44-3c1b-4f0e-a5b6-7c8d9e0f1a2b", "kind": gvk, "resource": gvr,
			"requestKind": gvk, "requestResource": gvr, "name": name, "namespace": "bench-scaleout-kopfgo",
			"operation": "CREATE",
			"userInfo":  map[string]any{"username": "system:admin", "groups": []any{"system:masters", "system:authenticated"}},
			"object":    object, "oldObject": nil, "dryRun": false,
			"options": map[string]any{"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
		},
	})
	if err != nil {
		panic(err)
	}
	return data
}

// BenchmarkShardLabelReview measures the CPU and allocations of answering
// one review addressed to the built-in shard label's webhook (the label
// added), from the request's bytes to the answer's, with the operator's
// logger at INFO writing to nowhere. The TLS connection is left out: it is
// the same for any answer.
//
//	go test -run '^$' -bench ShardLabelReview -benchmem ./internal/admission
func BenchmarkShardLabelReview(b *testing.B) {
	sel, err := resources.Parse("kopfexamples.kopf.dev")
	if err != nil {
		b.Fatal(err)
	}
	h := ShardLabelling("bench", 4, []resources.Selector{sel}, nil)[0]
	e := engine(h)
	e.Logger = logging.New(logging.Config{Writer: io.Discard})
	body := shardLabelReview("bench-00042")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, status, err := e.Answer(ctx, body, h.ID, nil, nil)
		if err != nil || status != http.StatusOK || !bytes.Contains(resp, []byte(`"patch"`)) {
			b.Fatalf("answer %d %v: %s", status, err, resp)
		}
	}
}
