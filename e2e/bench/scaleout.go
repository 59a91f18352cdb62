package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// scaleOutReplicas are the numbers of kopfgo replicas the scale-out
// scenario compares, and scaleOutShards the shards they share (a multiple
// of each).
var scaleOutReplicas = []int{1, 2, 4}

const scaleOutShards = 12

// scaleOut is the burst with kopfgo sharded over 1, 2 and 4 replicas
// (--shards): N objects created at once, until all are handled, against the
// same API server. Throughput is the whole's; CPU is the replicas' sum, per
// object; peak RSS is the largest replica's. The replicas share the
// machine's cores with the API server, etcd and the driver, which caps the
// curve (say so when reporting it).
func (b *bench) scaleOut(ctx context.Context) ([]result, error) {
	if !slices.Contains(b.o.contenders, "kopfgo") {
		return nil, errors.New("scaleout: the scenario runs kopfgo; add it to -contenders")
	}
	var out []result
	for _, replicas := range scaleOutReplicas {
		r, err := b.scaleOutOne(ctx, replicas)
		if err != nil {
			return out, fmt.Errorf("scaleout, %d replicas: %w", replicas, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (b *bench) scaleOutOne(ctx context.Context, replicas int) (result, error) {
	n := b.o.n
	name := fmt.Sprintf("kopfgo×%d", replicas)
	ns := b.name(fmt.Sprintf("bench-scaleout-%d", replicas))
	if err := b.namespace(ctx, ns); err != nil {
		return result{}, err
	}
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
	var metrics []string // each replica's metrics address
	for i := range replicas {
		pod := fmt.Sprintf("replica-%d", i)
		addr, err := freeAddr()
		if err != nil {
			return result{}, err
		}
		metrics = append(metrics, addr)
		p, err := startContenderWith(b.bins["kopfgo"], name, b.c.Kubeconfig, ns,
			filepath.Join(b.work, fmt.Sprintf("%s-scaleout-%d.log", pod, replicas)), "",
			[]string{"KOPFGO_BENCH_SHARDS=" + strconv.Itoa(scaleOutShards), "POD_NAME=" + pod, "KOPFGO_BENCH_METRICS_ADDR=" + addr})
		if err != nil {
			return result{}, err
		}
		ps = append(ps, p)
	}
	if err := b.shardsBalanced(ctx, ns, replicas); err != nil {
		return result{}, err
	}
	for _, p := range ps {
		if _, err := p.waitWatching(time.Minute); err != nil {
			return result{}, err
		}
		if _, err := p.quiet(ctx, time.Now(), idleWindow, idleTimeout); err != nil {
			return result{}, err
		}
	}

	logf("scaleout: %d replicas: creating %d objects", replicas, n)
	t.phase("value", n)
	marks := make([]phase, len(ps))
	events := make([]float64, len(ps))
	for i, p := range ps {
		if marks[i], err = b.mark(p); err != nil {
			return result{}, err
		}
		if events[i], err = watchEvents(ctx, metrics[i]); err != nil {
			return result{}, err
		}
	}
	begin := time.Now()
	if err := b.parallel(ctx, n, func(ctx context.Context, i int) error { return b.create(ctx, ns, i, false) }); err != nil {
		return result{}, err
	}
	created := time.Since(begin)
	last, err := t.wait(ctx, handledTimeout)
	if err != nil {
		return result{}, err
	}
	r := result{Scenario: "scaleout", Contender: name, Objects: n, Seconds: last.Sub(begin).Seconds(), DriverSeconds: created.Seconds()}
	r.PerSecond = float64(n) / r.Seconds
	// Each replica's figures, and summed (peak RSS: the largest).
	for i, ph := range marks {
		var one result
		one.Objects = n
		if _, err := ph.finish(ctx, &one, last); err != nil {
			return result{}, err
		}
		received, err := watchEvents(ctx, metrics[i])
		if err != nil {
			return result{}, err
		}
		r.Replicas = append(r.Replicas, replicaFigures{WatchEvents: received - events[i], CPUSeconds: one.CPUSeconds, PeakRSSMB: one.PeakRSSMB})
		r.CPUSeconds += one.CPUSeconds
		r.PeakRSSMB = max(r.PeakRSSMB, one.PeakRSSMB)
		r.Writes += one.Writes
		r.Calls += one.Calls
	}
	r.CPUPerObjectMs = r.CPUSeconds * 1000 / float64(n)
	r.WritesPerObject = float64(r.Writes) / float64(n)
	logf("scaleout: %d replicas: %.0f objects/s, %.2f ms CPU per object", replicas, r.PerSecond, r.CPUPerObjectMs)
	if replicas > 1 {
		if r.HandoverSeconds, err = b.handover(ctx, t, ns, n, ps[len(ps)-1]); err != nil {
			return result{}, err
		}
		logf("scaleout: %d replicas: objects created at a replica's SIGKILL handled %.1fs after it", replicas, r.HandoverSeconds)
	}
	return r, nil
}

// replicaFigures are one replica's figures in the scale-out scenario:
// the watch events it received, its CPU and its peak RSS over the burst.
type replicaFigures struct {
	WatchEvents float64 `json:"watchEvents"`
	CPUSeconds  float64 `json:"cpuSeconds"`
	PeakRSSMB   float64 `json:"peakRssMB"`
}

// handoverObjects are created at a replica's SIGKILL: a few land in its
// shards (with 4 replicas, none of 24 does once in a thousand runs).
const handoverObjects = 24

// handover SIGKILLs the victim, creates handoverObjects objects at once
// (after the n of the burst), and tells how long after the kill they are
// all handled: the victim's shards' Leases expire, the others take them
// and list their objects (the holder of shard 0 labels the new ones).
func (b *bench) handover(ctx context.Context, t *tracker, ns string, n int, victim *process) (float64, error) {
	if err := syscall.Kill(-victim.pid(), syscall.SIGKILL); err != nil {
		return 0, err
	}
	<-victim.done
	killed := time.Now()
	t.phase("value", handoverObjects)
	if err := b.parallel(ctx, handoverObjects, func(ctx context.Context, i int) error { return b.create(ctx, ns, n+i, false) }); err != nil {
		return 0, err
	}
	last, err := t.wait(ctx, handledTimeout)
	if err != nil {
		return 0, fmt.Errorf("after a replica's SIGKILL: %w", err)
	}
	return last.Sub(killed).Seconds(), nil
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

var watchEventSeries = regexp.MustCompile(`(?m)^kopfgo_watch_events_total\{resource="kopfexamples\.v1\.kopf\.dev",type="[A-Z]+"\} (\S+)$`)

// watchEvents are the watch events of KopfExamples a replica has received
// so far, of every type (its kopfgo_watch_events_total).
func watchEvents(ctx context.Context, addr string) (float64, error) {
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
	for _, m := range watchEventSeries.FindAllStringSubmatch(string(body), -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return 0, err
		}
		total += v
	}
	return total, nil
}

// shardsBalanced waits until the replicas hold every shard's Lease, each
// its share.
func (b *bench) shardsBalanced(ctx context.Context, ns string, replicas int) error {
	k, err := kubernetes.NewForConfig(b.c.RESTConfig())
	if err != nil {
		return err
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
			balanced := len(held) == replicas
			for _, c := range held {
				balanced = balanced && c == scaleOutShards/replicas
			}
			if balanced {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the %d replicas did not balance %d shards within 2 minutes (held: %v, %v)", replicas, scaleOutShards, held, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
