package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	for i := range replicas {
		pod := fmt.Sprintf("replica-%d", i)
		p, err := startContenderWith(b.bins["kopfgo"], name, b.c.Kubeconfig, ns,
			filepath.Join(b.work, fmt.Sprintf("%s-scaleout-%d.log", pod, replicas)), "",
			[]string{"KOPFGO_BENCH_SHARDS=" + strconv.Itoa(scaleOutShards), "POD_NAME=" + pod})
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
	for i, p := range ps {
		if marks[i], err = b.mark(p); err != nil {
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
	// Each replica's figures, summed (peak RSS: the largest).
	for _, ph := range marks {
		var one result
		one.Objects = n
		if _, err := ph.finish(ctx, &one, last); err != nil {
			return result{}, err
		}
		r.CPUSeconds += one.CPUSeconds
		r.PeakRSSMB = max(r.PeakRSSMB, one.PeakRSSMB)
		r.Writes += one.Writes
		r.Calls += one.Calls
	}
	r.CPUPerObjectMs = r.CPUSeconds * 1000 / float64(n)
	r.WritesPerObject = float64(r.Writes) / float64(n)
	logf("scaleout: %d replicas: %.0f objects/s, %.2f ms CPU per object", replicas, r.PerSecond, r.CPUPerObjectMs)
	return r, nil
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
