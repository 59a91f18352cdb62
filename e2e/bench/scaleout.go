package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kopfgo/kopfgo/e2e/bench/probe"
	"github.com/kopfgo/kopfgo/internal/conventions"
)

// scaleOut is the burst with kopfgo sharded over 1, 2 and 4 replicas
// (--shards; -replicas): N objects created at once (or at -scaleout-rate,
// a steady arrival), until all are handled, against the
// same API server, for each kopfgo contender (kopfgo, and kopfgo@REV for a
// before and after). Throughput is the whole's; CPU is the replicas' sum,
// per object; peak RSS is the largest replica's. The replicas share the
// machine's cores with the API server, etcd and the driver, which caps the
// curve (say so when reporting it).
//
// The replicas serve kopfgo's webhooks and manage one webhook
// configuration, which labels each new object with its shard at creation
// (2 writes per object, and nothing for the coordinator to label). They
// serve it behind one address, as behind a Service (service.go: each
// connection of the API server's to the next replica), with one
// certificate kept in a Secret, so that the reviews spread over them as
// in a cluster. A contender whose bench operator cannot be put behind one
// address serves it on an address of each replica's own: the replicas all
// write the configuration, and the last one's URL is the one the API
// server calls. A contender whose bench operator predates the webhook (or
// the sharding) runs without it (or is left out), and the results say so.
//
// With the floor among the contenders, the floor's burst is split over 1,
// 2 and 4 processes first (scaleOutFloor): the ratios to one process that
// a bare client-go program gets by the same split.
func (b *bench) scaleOut(ctx context.Context) ([]result, error) {
	var names []string
	floor := false
	for _, name := range b.contenders() {
		floor = floor || name == "floor"
		if name == "kopfgo" || strings.HasPrefix(name, "kopfgo@") {
			names = append(names, name)
		}
	}
	if len(names) == 0 && !floor {
		return nil, errors.New("scaleout: the scenario runs kopfgo and the floor; add kopfgo, kopfgo@REV or floor to -contenders")
	}
	var out []result
	if floor {
		for _, replicas := range b.o.replicas {
			r, err := b.scaleOutFloor(ctx, replicas)
			if err != nil {
				return out, fmt.Errorf("scaleout, the floor over %d processes: %w", replicas, err)
			}
			out = append(out, r)
		}
	}
	for _, name := range names {
		can := b.benchOperator(name)
		if !can.shards {
			logf("scaleout: %s: its bench operator has no sharding (KOPFGO_BENCH_SHARDS); left out", name)
			out = append(out, result{Scenario: "scaleout", Contender: name, Error: "its bench operator has no sharding (KOPFGO_BENCH_SHARDS and KOPFGO_BENCH_METRICS_ADDR); not run"})
			continue
		}
		for _, replicas := range b.o.replicas {
			r, err := b.scaleOutOne(ctx, name, can, replicas)
			if err != nil {
				return out, fmt.Errorf("scaleout, %s, %d replicas: %w", name, replicas, err)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// abilities are what a kopfgo contender's bench operator can do in the
// scale-out scenario, as its source says (e2e/bench/kopfgo/main.go of its
// revision).
type abilities struct {
	shards  bool // KOPFGO_BENCH_SHARDS and KOPFGO_BENCH_METRICS_ADDR
	webhook bool // KOPFGO_BENCH_WEBHOOK: the label at creation
	// service: KOPFGO_BENCH_WEBHOOK_HOST and _SECRET, the replicas'
	// webhooks behind one address (a Service, the bench's service).
	service bool
	// known is false for a prebuilt binary, whose source is not here: it
	// is run as if it could, and its webhook looked for.
	known bool
}

func (b *bench) benchOperator(name string) abilities {
	if _, ok := b.o.prebuilt[name]; ok {
		return abilities{shards: true, webhook: true, service: true}
	}
	src := repoRoot
	if rev, ok := strings.CutPrefix(name, "kopfgo@"); ok {
		src = filepath.Join(b.work, "bin", "src@"+rev) // where build unpacked it
	}
	main, err := os.ReadFile(filepath.Join(src, "e2e", "bench", "kopfgo", "main.go"))
	if err != nil {
		return abilities{known: true}
	}
	has := func(v string) bool { return bytes.Contains(main, []byte(`"`+v+`"`)) }
	return abilities{
		shards:  has("KOPFGO_BENCH_SHARDS") && has("KOPFGO_BENCH_METRICS_ADDR"),
		webhook: has("KOPFGO_BENCH_WEBHOOK"),
		service: has("KOPFGO_BENCH_WEBHOOK_HOST") && has("KOPFGO_BENCH_WEBHOOK_SECRET"),
		known:   true,
	}
}

func (b *bench) scaleOutOne(ctx context.Context, contender string, can abilities, replicas int) (result, error) {
	n := b.o.n
	name := fmt.Sprintf("%s×%d", contender, replicas)
	base := b.name(fmt.Sprintf("bench-scaleout-%s-%d", contender, replicas))
	ns := base
	if err := b.namespace(ctx, ns); err != nil {
		return result{}, err
	}
	b.leave(ns, n)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t, err := b.watch(ctx, ns)
	if err != nil {
		return result{}, err
	}
	var ps []*process
	defer func() {
		for _, p := range ps {
			p.stop()
		}
	}()
	managed := base + ".bench.kopf.dev" // the webhook configurations' name, this run's own
	var metrics, hooks []string         // each replica's metrics and webhook addresses
	var svc *service                    // in front of the webhooks, where the replicas can be put behind one
	if can.webhook && can.service {
		front, backends, err := sameAddrs(replicas)
		if err != nil {
			return result{}, err
		}
		if svc, err = newService(front, backends); err != nil {
			return result{}, err
		}
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() { svc.run(ctx) })
		defer cancel() // before the Wait: the service ends with ctx
		hooks = backends
	}
	for i := range replicas {
		pod := podName(i)
		addr, err := freeAddr()
		if err != nil {
			return result{}, err
		}
		metrics = append(metrics, addr)
		env := []string{"KOPFGO_BENCH_SHARDS=" + strconv.Itoa(b.o.shards), "POD_NAME=" + pod, "KOPFGO_BENCH_METRICS_ADDR=" + addr}
		switch {
		case svc != nil:
			env = append(env, "KOPFGO_BENCH_WEBHOOK="+managed, "KOPFGO_BENCH_WEBHOOK_ADDR="+hooks[i], "KOPFGO_BENCH_WEBHOOK_HOST="+svc.ln.Addr().String(),
				"KOPFGO_BENCH_WEBHOOK_SANS="+strings.Join(hostsOf(hooks), ","), "KOPFGO_BENCH_WEBHOOK_SECRET="+base+"-webhook")
		case can.webhook:
			hook, err := freeAddr()
			if err != nil {
				return result{}, err
			}
			hooks = append(hooks, hook)
			env = append(env, "KOPFGO_BENCH_WEBHOOK="+managed, "KOPFGO_BENCH_WEBHOOK_ADDR="+hook)
		}
		file := b.name(fmt.Sprintf("%s-scaleout-%d-%s", contender, replicas, pod))
		// Not profiled from start to end (-cpuprofile): -profile takes
		// profiles of the burst and of the handover instead.
		p, err := startContenderWith(b.bins[contender], name, b.kubeconfig, ns, filepath.Join(b.work, file+".log"), "", env)
		if err != nil {
			return result{}, err
		}
		ps = append(ps, p)
	}
	if _, err := b.shardsBalanced(ctx, ns, replicas); err != nil {
		return result{}, err
	}
	for _, p := range ps {
		if _, err := p.waitWatching(time.Minute); err != nil {
			return result{}, err
		}
	}
	webhook := "none: the bench operator of " + contender + " has no KOPFGO_BENCH_WEBHOOK"
	// SIGKILLed after the burst: the last replica, or the one before if the
	// last alone serves the webhook. Behind the service, the killed one's
	// share of the reviews then fails open (the service, like kube-proxy
	// until the EndpointSlice drops a dead pod, still deals it
	// connections), and the coordinator labels those objects.
	victim := len(ps) - 1
	if can.webhook {
		front := ""
		if svc != nil {
			front = svc.ln.Addr().String()
		}
		i, err := b.labelWebhook(ctx, ns, managed, front, hooks)
		switch {
		case err == nil && i < 0:
			webhook = "all, behind one address"
		case err == nil:
			webhook = podName(i) + "'s"
			if i == victim {
				victim--
			}
		case !can.known && ctx.Err() == nil:
			webhook = "none: " + err.Error()
		default:
			return result{}, err
		}
	}
	logf("scaleout: %s: the label webhook: %s", name, webhook)
	for _, p := range ps {
		if _, err := p.quiet(ctx, time.Now(), idleWindow, idleTimeout); err != nil {
			return result{}, err
		}
	}

	calls, err := b.webhookCalls(ctx, managed)
	if err != nil {
		return result{}, err
	}
	events := func(i int) (float64, error) { return watchEvents(ctx, metrics[i]) }
	var sent, dealt []int64
	if svc != nil {
		sent, dealt = svc.bytesIn(), svc.connections()
	}
	reviewed, err := labelReviews(ctx, metrics)
	if err != nil {
		return result{}, err
	}
	r, profiles, err := b.scaleOutBurst(ctx, name, ns, t, ps, events, func(ctx context.Context, i int) error { return b.create(ctx, ns, i, false) })
	if err != nil {
		return result{}, err
	}
	if svc != nil {
		for i, n := range svc.bytesIn() {
			r.Replicas[i].WebhookKB = float64(n-sent[i]) / 1024
		}
		for i, n := range svc.connections() {
			r.Replicas[i].WebhookConns = n - dealt[i]
		}
	}
	if can.webhook {
		now, err := labelReviews(ctx, metrics)
		if err != nil {
			return result{}, err
		}
		for i, n := range now {
			r.Replicas[i].LabelReviews = int64(n - reviewed[i])
		}
	}
	r.Webhook = webhook
	after, err := b.webhookCalls(ctx, managed)
	if err != nil {
		return result{}, err
	}
	r.WebhookCalls, r.WebhookFailOpen = after.calls-calls.calls, after.failOpen-calls.failOpen
	logf("scaleout: %s: %.0f objects/s, %.2f ms CPU per object, %.2f writes per object, label patches per replica %s, the label webhook called %d times (%d failed open), connections to it per replica %s",
		name, r.PerSecond, r.CPUPerObjectMs, r.WritesPerObject, shardLabels(r.Replicas), r.WebhookCalls, r.WebhookFailOpen,
		perReplica(r.Replicas, "%.0f", func(f replicaFigures) float64 { return float64(f.WebhookConns) }))
	profiles.wait()
	if replicas > 1 {
		survivors := slices.Delete(slices.Clone(ps), victim, victim+1)
		profiles := b.profileWindow(ctx, survivors, "handover", handoverProfileWindow)
		if r.HandoverSeconds, r.HandoverLeasesSeconds, err = b.handover(ctx, t, ns, n, podName(victim), ps[victim]); err != nil {
			return result{}, err
		}
		profiles.wait()
		logf("scaleout: %s: objects created at replica-%d's SIGKILL handled %.1fs after it (its shards taken after %.1fs)", name, victim, r.HandoverSeconds, r.HandoverLeasesSeconds)
	}
	return r, nil
}

// scaleOutBurst creates the n objects of the burst in ns with create,
// waits until the tracker t has seen them all handled by the replicas ps,
// and measures each replica over it (events tells the watch events replica
// i has received so far); the CPU profiles of -profile are being taken
// when it returns (on an error, they end with ctx).
func (b *bench) scaleOutBurst(ctx context.Context, name, ns string, t *tracker, ps []*process, events func(i int) (float64, error), create func(ctx context.Context, i int) error) (result, *profiles, error) {
	n := b.o.n
	idle, err := idleCPU(ctx, ps, scaleOutIdle)
	if err != nil {
		return result{}, nil, err
	}
	logf("scaleout: %s: creating %d objects", name, n)
	t.phase("value", n)
	marks := make([]phase, len(ps))
	before := make([]float64, len(ps))
	for i, p := range ps {
		var err error
		if marks[i], err = b.mark(p); err != nil {
			return result{}, nil, err
		}
		if before[i], err = events(i); err != nil {
			return result{}, nil, err
		}
	}
	profiles := b.profileWindow(ctx, ps, "burst", scaleOutProfileWindow(n, b.o.scaleOutRate))
	begin := time.Now()
	if err := b.paced(ctx, n, b.o.scaleOutRate, create); err != nil {
		return result{}, nil, err
	}
	created := time.Since(begin)
	last, err := t.wait(ctx, handledTimeout)
	if err != nil {
		return result{}, nil, err
	}
	r := result{Scenario: "scaleout", Contender: name, Objects: n, Seconds: last.Sub(begin).Seconds(), DriverSeconds: created.Seconds()}
	r.PerSecond = float64(n) / r.Seconds
	// Each replica's figures, and summed (peak RSS: the largest).
	for i, ph := range marks {
		var one result
		one.Objects = n
		if _, err := ph.finish(ctx, &one, last); err != nil {
			return result{}, nil, err
		}
		received, err := events(i)
		if err != nil {
			return result{}, nil, err
		}
		s, err := ps[i].stats()
		if err != nil {
			return result{}, nil, err
		}
		anon, err := anonRSS(ps[i].pid())
		if err != nil {
			return result{}, nil, err
		}
		r.Replicas = append(r.Replicas, replicaFigures{WatchEvents: received - before[i], CPUSeconds: one.CPUSeconds, PeakRSSMB: one.PeakRSSMB,
			AnonRSSMB: float64(anon) / (1 << 20), ShardLabels: s.ShardLabels - ph.stats.shardLabels, LabelsUncounted: !s.CountsShardLabels, IdleCPUMsPerS: idle[i]})
		r.CPUSeconds += one.CPUSeconds
		r.PeakRSSMB = max(r.PeakRSSMB, one.PeakRSSMB)
		r.Writes += one.Writes
		r.Calls += one.Calls
	}
	r.CPUPerObjectMs = r.CPUSeconds * 1000 / float64(n)
	r.WritesPerObject = float64(r.Writes) / float64(n)
	return r, profiles, nil
}

// scaleOutIdle is how long the replicas' CPU is measured before a burst,
// with nothing to do: what a replica costs whatever its share (its Leases,
// the runtime's own work), which the burst's CPU includes for as long as
// the burst lasts.
const scaleOutIdle = 10 * time.Second

// idleCPU is each process's CPU over d, in ms per second.
func idleCPU(ctx context.Context, ps []*process, d time.Duration) ([]float64, error) {
	read := func() ([]time.Duration, error) {
		out := make([]time.Duration, len(ps))
		for i, p := range ps {
			var err error
			if out[i], err = cpuTime(p.pid()); err != nil {
				return nil, fmt.Errorf("%s: %w", p.name, err)
			}
		}
		return out, nil
	}
	before, err := read()
	if err != nil {
		return nil, err
	}
	begin := time.Now()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(d):
	}
	after, err := read()
	if err != nil {
		return nil, err
	}
	secs := time.Since(begin).Seconds()
	out := make([]float64, len(ps))
	for i := range ps {
		out[i] = float64((after[i] - before[i]).Milliseconds()) / secs
	}
	return out, nil
}

// scaleOutFloor is the floor's burst split over replicas the way kopfgo's
// sharding splits it, without the sharding itself: each of the floors
// watches the objects of its own shards (a label selector, shards dealt
// round-robin, fixed), and the objects are created with their shard's
// label (kopfgo's hash of their names). What it costs a bare client-go
// program to split one workload over processes, by the same watch
// selectors, is the floor of kopfgo's ratios to one replica.
func (b *bench) scaleOutFloor(ctx context.Context, replicas int) (result, error) {
	name := fmt.Sprintf("floor×%d", replicas)
	ns := b.name(fmt.Sprintf("bench-scaleout-floor-%d", replicas))
	if err := b.namespace(ctx, ns); err != nil {
		return result{}, err
	}
	b.leave(ns, b.o.n)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t, err := b.watch(ctx, ns)
	if err != nil {
		return result{}, err
	}
	var ps []*process
	defer func() {
		for _, p := range ps {
			p.stop()
		}
	}()
	for i := range replicas {
		var held []string
		for s := i; s < b.o.shards; s += replicas {
			held = append(held, strconv.Itoa(s))
		}
		env := []string{"KOPFGO_BENCH_SELECTOR=" + shardLabel + " in (" + strings.Join(held, ",") + ")"}
		file := b.name(fmt.Sprintf("floor-scaleout-%d-%s", replicas, podName(i)))
		p, err := startContenderWith(b.bins["floor"], "floor", b.kubeconfig, ns, filepath.Join(b.work, file+".log"), "", env)
		if err != nil {
			return result{}, err
		}
		ps = append(ps, p)
	}
	for _, p := range ps {
		if _, err := p.waitWatching(time.Minute); err != nil {
			return result{}, err
		}
		if _, err := p.quiet(ctx, time.Now(), idleWindow, idleTimeout); err != nil {
			return result{}, err
		}
	}
	events := func(i int) (float64, error) {
		s, err := ps[i].stats()
		return float64(s.WatchEvents), err
	}
	create := func(ctx context.Context, i int) error {
		obj, err := object(i, false)
		if err != nil {
			return err
		}
		obj.SetLabels(map[string]string{shardLabel: strconv.Itoa(conventions.Shard(ns, obj.GetName(), b.o.shards))})
		_, err = b.dyn.Resource(probe.GVR).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		return err
	}
	r, profiles, err := b.scaleOutBurst(ctx, name, ns, t, ps, events, create)
	if err != nil {
		return result{}, err
	}
	profiles.wait()
	logf("scaleout: %s: %.0f objects/s, %.2f ms CPU per object, %.2f writes per object", name, r.PerSecond, r.CPUPerObjectMs, r.WritesPerObject)
	return r, nil
}

// podName is the i-th replica's POD_NAME, which begins its identity in the
// Leases.
func podName(i int) string { return fmt.Sprintf("replica-%d", i) }

// scaleOutProfileWindow is how long the CPU profiles of a burst of n
// objects last (-profile): the burst and some of the quiet after it. Paced
// at perSecond (-scaleout-rate), the creations alone take n/perSecond.
func scaleOutProfileWindow(n int, perSecond float64) time.Duration {
	d := 5*time.Second + time.Duration(n)*20*time.Millisecond
	if perSecond > 0 {
		d = max(d, 10*time.Second+time.Duration(float64(n)/perSecond*float64(time.Second)))
	}
	return d
}

// handoverProfileWindow covers a handover: a lease duration (15 s), the
// rebalance and a listing.
const handoverProfileWindow = 30 * time.Second

// profiles are CPU profiles being taken.
type profiles struct{ wg sync.WaitGroup }

// wait returns once they are written.
func (p *profiles) wait() { p.wg.Wait() }

// profileWindow takes, with -profile, a CPU profile of each process over
// the next d (its probe's /debug/pprof/profile), then its heap profile,
// into the profile directory, named as the process's log with -<what>;
// a profile that cannot be taken is logged, not fatal.
func (b *bench) profileWindow(ctx context.Context, ps []*process, what string, d time.Duration) *profiles {
	out := &profiles{}
	if b.o.profileDir == "" {
		return out
	}
	for _, p := range ps {
		base := filepath.Join(b.o.profileDir, strings.TrimSuffix(filepath.Base(p.log.Name()), ".log")+"-"+what)
		out.wg.Go(func() {
			for _, prof := range []struct{ path, file string }{
				{fmt.Sprintf("profile?seconds=%d", int(d.Seconds())), base + ".cpu.pprof"},
				{"heap", base + ".heap.pprof"},
			} {
				if err := fetchTo(ctx, "http://"+p.addr+"/debug/pprof/"+prof.path, prof.file); err != nil {
					logf("scaleout: profiling %s: %v", p.log.Name(), err)
					return
				}
			}
		})
	}
	return out
}

// fetchTo writes what a GET of url answers to file.
func fetchTo(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o644)
}

// replicaFigures are one replica's figures in the scale-out scenario:
// the watch events it received, its CPU and its peak RSS over the burst.
type replicaFigures struct {
	WatchEvents float64 `json:"watchEvents"`
	CPUSeconds  float64 `json:"cpuSeconds"`
	PeakRSSMB   float64 `json:"peakRssMB"`
	// AnonRSSMB is its anonymous memory (RssAnon) once the burst is
	// handled: its own, without the pages of its binary, which replicas
	// on one node share and peak RSS counts in each.
	AnonRSSMB float64 `json:"anonRssMB,omitempty"`
	// ShardLabels are the label patches it made (the coordinator's, for
	// objects created without the label); LabelsUncounted: its probe
	// (an older revision's) does not count them.
	ShardLabels     int64 `json:"shardLabels"`
	LabelsUncounted bool  `json:"labelsUncounted,omitempty"`
	// IdleCPUMsPerS is its CPU before the burst, with nothing to do, in
	// ms per second (scaleOutIdle).
	IdleCPUMsPerS float64 `json:"idleCpuMsPerS"`
	// WebhookKB is what the API server sent its webhook server over the
	// burst, through the service in front of the replicas (0 without it):
	// its share of the label webhook's reviews.
	WebhookKB float64 `json:"webhookKB,omitempty"`
	// LabelReviews are the label webhook's reviews it answered over the
	// burst, by its own count (kopfgo_admission_requests_total); 0 for a
	// revision without the metric.
	LabelReviews int64 `json:"labelReviews,omitempty"`
	// WebhookConns are the connections the API server opened to its
	// webhook server over the burst, through the service (0 without it):
	// a TLS handshake each.
	WebhookConns int64 `json:"webhookConns,omitempty"`
}

// hostsOf are the hosts of HOST:PORT addresses.
func hostsOf(addrs []string) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i], _, _ = net.SplitHostPort(a)
	}
	return out
}

// shardLabels are the replicas' label patches, "a / b / c" ("?" where not
// counted).
func shardLabels(rs []replicaFigures) string {
	if len(rs) == 0 {
		return "-"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = strconv.FormatInt(r.ShardLabels, 10)
		if r.LabelsUncounted {
			parts[i] = "?"
		}
	}
	return strings.Join(parts, " / ")
}

// handoverObjects are created at a replica's SIGKILL: a few land in its
// shards (with 4 replicas, none of 24 does once in a thousand runs).
const handoverObjects = 24

// handover SIGKILLs the victim, creates handoverObjects objects at once
// (after the n of the burst), and tells how long after the kill they are
// all handled: the victim's shards' Leases expire, the others take them
// and list their objects (labelled at creation by the webhook, or by the
// holder of shard 0 without it).
// It also tells when the survivors held all the shards between them
// (the Leases' part of the handover; the rest is the pause of the watches'
// restart, the listing and the handling, and maybe a rebalance).
func (b *bench) handover(ctx context.Context, t *tracker, ns string, n int, gone string, victim *process) (handled, taken float64, err error) {
	if err := syscall.Kill(-victim.pid(), syscall.SIGKILL); err != nil {
		return 0, 0, err
	}
	<-victim.done
	killed := time.Now()
	type seen struct {
		at  time.Time
		err error
	}
	balanced := make(chan seen, 1)
	go func() {
		at, err := b.shardsTaken(ctx, ns, gone)
		balanced <- seen{at, err}
	}()
	t.phase("value", handoverObjects)
	if err := b.parallel(ctx, handoverObjects, func(ctx context.Context, i int) error { return b.create(ctx, ns, n+i, false) }); err != nil {
		return 0, 0, err
	}
	last, err := t.wait(ctx, handledTimeout)
	if err != nil {
		return 0, 0, fmt.Errorf("after a replica's SIGKILL: %w", err)
	}
	bal := <-balanced
	if bal.err != nil {
		return 0, 0, fmt.Errorf("after a replica's SIGKILL: %w", bal.err)
	}
	return last.Sub(killed).Seconds(), bal.at.Sub(killed).Seconds(), nil
}

// freeAddr is a loopback address with a port free now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

var (
	watchEventSeries  = regexp.MustCompile(`(?m)^kopfgo_watch_events_total\{resource="kopfexamples\.v1\.kopf\.dev",type="[A-Z]+"\} (\S+)$`)
	labelReviewSeries = regexp.MustCompile(`(?m)^kopfgo_admission_requests_total\{code="\d+",webhook="shard\.kopfgo\.dev/[^"]*"\} (\S+)$`)
)

// watchEvents are the watch events of KopfExamples a replica has received
// so far, of every type (its kopfgo_watch_events_total).
func watchEvents(ctx context.Context, addr string) (float64, error) {
	return metricSum(ctx, addr, watchEventSeries)
}

// labelReviews are the label webhook's reviews each replica has answered
// so far, whatever the answer's code (its kopfgo_admission_requests_total
// of the shard labelling's webhooks).
func labelReviews(ctx context.Context, addrs []string) ([]float64, error) {
	out := make([]float64, len(addrs))
	for i, a := range addrs {
		var err error
		if out[i], err = metricSum(ctx, a, labelReviewSeries); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// metricSum is the sum of the series that series matches (its one group
// the value) in the metrics served at addr.
func metricSum(ctx context.Context, addr string, series *regexp.Regexp) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("the metrics of a replica: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, m := range series.FindAllStringSubmatch(string(body), -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return 0, err
		}
		total += v
	}
	return total, nil
}

// shardsBalanced waits until the replicas hold every shard's Lease, each
// its share, and tells when it saw them so.
func (b *bench) shardsBalanced(ctx context.Context, ns string, replicas int) (time.Time, error) {
	return b.shardLeases(ctx, ns, fmt.Sprintf("the %d replicas to balance the %d shards", replicas, b.o.shards), func(held map[string]int) bool {
		balanced := len(held) == replicas
		for _, c := range held {
			balanced = balanced && c == b.o.shards/replicas
		}
		return balanced
	})
}

// shardsTaken waits until the replicas but the gone one (its POD_NAME)
// hold every shard's Lease between them, and tells when it saw them so.
func (b *bench) shardsTaken(ctx context.Context, ns, gone string) (time.Time, error) {
	return b.shardLeases(ctx, ns, "the shards of "+gone+" to be taken", func(held map[string]int) bool {
		n := 0
		for holder, c := range held {
			if !strings.HasPrefix(holder, gone+"_") { // the identity is POD_NAME_<random>
				n += c
			}
		}
		return n == b.o.shards
	})
}

// shardLeases polls the shards' Leases until done says yes of their
// holders (holder identity → shards held), for two minutes at most, and
// tells when it saw them so.
func (b *bench) shardLeases(ctx context.Context, ns, what string, done func(held map[string]int) bool) (time.Time, error) {
	k, err := kubernetes.NewForConfig(b.c.RESTConfig())
	if err != nil {
		return time.Time{}, err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		list, err := k.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
		held := map[string]int{}
		if err == nil {
			for _, l := range list.Items {
				if strings.HasPrefix(l.Name, "bench-shard-") && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
					held[*l.Spec.HolderIdentity]++
				}
			}
			if done(held) {
				return time.Now(), nil
			}
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("waited 2 minutes for %s (held: %v, %v)", what, held, err)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// labelWebhook waits until the API server calls a replica's webhook that
// labels new objects with their shard: the managed configuration names it,
// and an object created in ns as a dry run (which runs the mutating
// webhooks and stores nothing) comes back labelled. It returns the index
// of the replica (of addrs, their webhook servers') whose URL the
// configuration holds (the replicas all write it, the last one's stays),
// or -1 if the URL is the front ("" for none) that is in front of them all.
func (b *bench) labelWebhook(ctx context.Context, ns, managed, front string, addrs []string) (int, error) {
	k, err := kubernetes.NewForConfig(b.c.RESTConfig())
	if err != nil {
		return 0, err
	}
	obj, err := object(0, false)
	if err != nil {
		return 0, err
	}
	obj.SetName("webhook-probe")
	deadline := time.Now().Add(time.Minute)
	why := errors.New("no configuration yet")
	for {
		named := -1
		if cfg, err := k.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, managed, metav1.GetOptions{}); err != nil {
			why = err
		} else {
			for _, h := range cfg.Webhooks {
				if !strings.HasPrefix(h.Name, shardWebhookPrefix) || h.ClientConfig.URL == nil {
					continue
				}
				why = fmt.Errorf("the label webhook's URL %s is none of the replicas' (%v)", *h.ClientConfig.URL, addrs)
				if u, err := url.Parse(*h.ClientConfig.URL); err == nil {
					named = slices.Index(addrs, u.Host)
					if front != "" && u.Host == front {
						named = len(addrs) // all of them
					}
				}
			}
		}
		if named >= 0 {
			u, err := b.dyn.Resource(probe.GVR).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil && u.GetLabels()[shardLabel] != "" {
				if named == len(addrs) {
					return -1, nil
				}
				return named, nil
			}
			why = fmt.Errorf("an object created as a dry run comes without the label (%v)", err)
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the label webhook %s…%s is not called within a minute: %w", shardWebhookPrefix, managed, why)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// The bench operator's sharding label, and the names of the built-in
// webhooks that set it (shard.kopfgo.dev.<resource>.<managed>).
const (
	shardLabel         = probe.ShardLabelPrefix + "bench"
	shardWebhookPrefix = "shard.kopfgo.dev."
)

// webhookCounts are the API server's counts of the calls of the label
// webhooks of one managed configuration.
type webhookCounts struct{ calls, failOpen int64 }

// webhookCalls reads the API server's counts of the label webhooks'
// calls (apiserver_admission_webhook_admission_duration_seconds, whatever
// the outcome) and of those that failed and were ignored
// (apiserver_admission_webhook_fail_open_count): the webhook's own
// evidence that the objects were labelled at creation.
func (b *bench) webhookCalls(ctx context.Context, managed string) (webhookCounts, error) {
	families, err := b.c.Metrics(ctx)
	if err != nil {
		return webhookCounts{}, err
	}
	var out webhookCounts
	ours := func(labels []*dto.LabelPair) bool {
		for _, l := range labels {
			if l.GetName() == "name" {
				return strings.HasPrefix(l.GetValue(), shardWebhookPrefix) && strings.HasSuffix(l.GetValue(), "."+managed)
			}
		}
		return false
	}
	for _, m := range families["apiserver_admission_webhook_admission_duration_seconds"].GetMetric() {
		if ours(m.GetLabel()) {
			out.calls += int64(m.GetHistogram().GetSampleCount())
		}
	}
	for _, m := range families["apiserver_admission_webhook_fail_open_count"].GetMetric() {
		if ours(m.GetLabel()) {
			out.failOpen += int64(m.GetCounter().GetValue())
		}
	}
	return out, nil
}
