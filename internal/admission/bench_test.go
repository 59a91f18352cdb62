package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
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
	ctx, cancel := context.WithCancel(context.Background())
	configs := make(chan ClientConfig, 1)
	done := make(chan error)
	go func() { done <- srv.Run(ctx, func(cc ClientConfig) { configs <- cc }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	cc := <-configs
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cc.CABundle)
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
