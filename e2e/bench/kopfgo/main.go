// Command kopfgo is kopfgo's contender in the benchmark: an operator with a
// create handler returning a small result (so each new object gets the
// diff-base annotation and status.create_fn) and an update handler, run with
// the defaults a user gets, logs included. KOPFGO_BENCH_NO_CONDITIONS=1
// turns the framework's status.conditions off. KOPFGO_BENCH_SHARDS=N makes it
// one replica of a sharded operator (the scale-out scenario),
// KOPFGO_BENCH_METRICS_ADDR=HOST:PORT serves its metrics there, and
// KOPFGO_BENCH_WEBHOOK=NAME with KOPFGO_BENCH_WEBHOOK_ADDR=127.0.0.1:PORT
// makes it serve its webhooks there and manage the webhook configurations
// NAME: with sharding, the built-in webhook that labels new objects with
// their shard at creation. Replicas behind one address, as behind a Service
// (the scale-out scenario's round-robin proxy), are given it as
// KOPFGO_BENCH_WEBHOOK_HOST=HOST:PORT, the certificate's other names as
// KOPFGO_BENCH_WEBHOOK_SANS=A,B,…, and the Secret that keeps the
// certificate they share as KOPFGO_BENCH_WEBHOOK_SECRET=NAME.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/bench/probe"
	"github.com/kopfgo/kopfgo/internal/logging"
)

func main() {
	ctx, c, stop, err := probe.Start()
	if err == nil {
		opts := kopfgo.Options{RESTConfig: c.Config, Namespaces: []string{c.Namespace}, Standalone: true}
		if os.Getenv("KOPFGO_BENCH_METRICS") == "1" { // the kopfgo-metrics contender
			opts.MetricsAddr = "127.0.0.1:0"
		}
		if os.Getenv("KOPFGO_BENCH_NO_CONDITIONS") == "1" { // the kopfgo-noconditions contender
			opts.Settings.Persistence.Conditions.Disabled = true
		}
		if v := os.Getenv("KOPFGO_BENCH_METRICS_ADDR"); v != "" { // the scale-out scenario reads each replica's
			opts.MetricsAddr = v
		}
		if v := os.Getenv("KOPFGO_BENCH_SHARDS"); v != "" { // the scale-out scenario's replicas
			if opts.Sharding.Shards, err = strconv.Atoi(v); err != nil {
				fmt.Fprintln(os.Stderr, "kopfgo: KOPFGO_BENCH_SHARDS:", err)
				os.Exit(2)
			}
			opts.Sharding.Name, opts.Sharding.Namespace = "bench", c.Namespace
		}
		if v := os.Getenv("KOPFGO_BENCH_WEBHOOK"); v != "" { // the scale-out scenario's label at creation
			if opts.Settings.Admission, err = webhook(v, os.Getenv("KOPFGO_BENCH_WEBHOOK_ADDR"), os.Getenv("KOPFGO_BENCH_WEBHOOK_HOST")); err != nil {
				fmt.Fprintln(os.Stderr, "kopfgo: KOPFGO_BENCH_WEBHOOK_ADDR or _HOST:", err)
				os.Exit(2)
			}
			if sans := os.Getenv("KOPFGO_BENCH_WEBHOOK_SANS"); sans != "" {
				opts.Settings.Admission.Server.ExtraSANs = strings.Split(sans, ",")
			}
			if secret := os.Getenv("KOPFGO_BENCH_WEBHOOK_SECRET"); secret != "" {
				opts.Settings.Admission.CertSecret = c.Namespace + "/" + secret
			}
		}
		if os.Getenv("KOPFGO_BENCH_DEBUG") == "1" { // to investigate, not to measure
			opts.Logger = logging.New(logging.Config{Level: slog.LevelDebug})
		}
		op := kopfgo.New(opts)
		op.On.Create("kopfexamples", func(context.Context, *kopfgo.Change) (any, error) {
			c.Probe.Call()
			return map[string]any{"message": probe.Message}, nil
		}, kopfgo.ID(probe.CreateHandler))
		op.On.Update("kopfexamples", func(context.Context, *kopfgo.Change) (any, error) {
			c.Probe.Call()
			return nil, nil
		}, kopfgo.ID("update_fn"))
		err = op.Run(ctx)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kopfgo:", err)
		os.Exit(1)
	}
}

// webhook serves the webhooks on addr (HOST:PORT; the API server of the
// bench's cluster runs on this machine and calls it there) and manages the
// webhook configurations of that name. A front ("" for none) is the
// address in front of the replicas that the configurations name instead;
// its port must be addr's, as a webhook's URL takes the server's port.
func webhook(managed, addr, front string) (kopfgo.AdmissionSettings, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return kopfgo.AdmissionSettings{}, err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return kopfgo.AdmissionSettings{}, err
	}
	server := &kopfgo.WebhookServer{Addr: host, Port: p}
	if front != "" {
		fhost, fport, err := net.SplitHostPort(front)
		if err != nil {
			return kopfgo.AdmissionSettings{}, err
		}
		if fport != port {
			return kopfgo.AdmissionSettings{}, fmt.Errorf("the front %s and the server %s listen on different ports; give them one", front, addr)
		}
		server.Host = fhost
	}
	return kopfgo.AdmissionSettings{Server: server, Managed: managed}, nil
}
