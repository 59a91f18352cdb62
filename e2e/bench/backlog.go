package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopfgo/kopfgo/e2e/bench/probe"
	"github.com/kopfgo/kopfgo/e2e/cluster"
)

// backlog is what an operator meets after downtime, a failover or a shard
// handover: -backlog-n objects, none handled, all present before the
// contender starts. From its start to the last object seen handled (the
// tracker) is the drain time; CPU and peak RSS are the process's over the
// whole of it; the API server's own apiserver_request_total, read before
// the start and after the contender goes idle, gives the patches that
// succeeded and the requests that failed, by code.
func (b *bench) backlog(ctx context.Context) ([]result, error) {
	return b.backlogOn(ctx, "backlog")
}

// backlogShed is the backlog against an API server that sheds load: a
// cluster of its own started with low in-flight limits
// (-shed-inflight/-shed-mutating), the contenders running as a service
// account. The admin the other scenarios use is in system:masters, which
// API Priority and Fairness and the in-flight limits exempt: as the admin,
// no contender would ever be shed.
func (b *bench) backlogShed(ctx context.Context) ([]result, error) {
	logf("backlog-shed: starting a cluster with --max-requests-inflight=%d --max-mutating-requests-inflight=%d", b.o.shedInflight, b.o.shedMutating)
	c, err := cluster.Start(ctx, cluster.Options{Logf: logf, ExtraAPIServerArgs: []string{
		"--max-requests-inflight=" + strconv.Itoa(b.o.shedInflight),
		"--max-mutating-requests-inflight=" + strconv.Itoa(b.o.shedMutating),
	}})
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	if err := c.ApplyFile(ctx, filepath.Join(repoRoot, "examples", "crd.yaml")); err != nil {
		return nil, err
	}
	shed, err := newBench(ctx, b.o, c, b.bins, b.work)
	if err != nil {
		return nil, err
	}
	shed.round = b.round
	if shed.kubeconfig, _, err = c.ServiceAccount(ctx, "bench-operators", "contender"); err != nil {
		return nil, err
	}
	if err := shed.warmup(ctx); err != nil {
		return nil, err
	}
	return shed.backlogOn(ctx, "backlog-shed")
}

func (b *bench) backlogOn(ctx context.Context, scenario string) ([]result, error) {
	var out []result
	for _, name := range b.contenders() {
		r, err := b.backlogOne(ctx, scenario, name)
		if err != nil && ctx.Err() != nil {
			return out, fmt.Errorf("%s, %s: %w", scenario, name, err)
		}
		if err != nil {
			// A contender that cannot drain the backlog (the floor may not
			// bear a server that sheds load) is a result, not the end of
			// the run.
			logf("%s: %s: %v", scenario, name, err)
			r.Scenario, r.Contender, r.Objects, r.Error, r.LoadAverage = scenario, name, b.o.backlogN, err.Error(), loadAverage()
		}
		out = append(out, r)
	}
	return out, nil
}

func (b *bench) backlogOne(ctx context.Context, scenario, name string) (result, error) {
	n := b.o.backlogN
	ns := b.name("bench-" + scenario + "-" + name)
	if err := b.namespace(ctx, ns); err != nil {
		return result{}, err
	}
	// The next contender meets the API server as this one did: without
	// this one's objects, which would grow etcd and the watch cache it
	// serves from (deferred first, so it runs after the contender stops).
	defer b.clear(ns)
	logf("%s: %s: creating %d unhandled objects", scenario, name, n)
	if err := b.parallel(ctx, n, func(ctx context.Context, i int) error { return b.create(ctx, ns, i, false) }); err != nil {
		return result{}, err
	}
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t, err := b.watch(tctx, ns)
	if err != nil {
		return result{}, err
	}
	t.phase("value", n)
	before, err := b.c.RequestCounts(ctx)
	if err != nil {
		return result{}, err
	}

	logf("%s: %s: starting on them", scenario, name)
	p, err := b.start(name, ns, scenario)
	if err != nil {
		return result{}, err
	}
	defer p.stop()
	r := result{Scenario: scenario, Contender: name, Objects: n}
	last, waitErr := t.wait(ctx, b.o.backlogTimeout(n))
	if waitErr != nil {
		// What the contender did until given up on: its figures so far.
		if err := r.sofar(p); err != nil {
			return r, errors.Join(waitErr, err)
		}
	} else {
		r.Seconds = last.Sub(p.started).Seconds()
		r.PerSecond = float64(n) / r.Seconds
		ph := phase{p: p} // from the process's start: CPU 0, no writes, no calls
		if _, err := ph.finish(ctx, &r, last); err != nil {
			return result{}, err
		}
	}
	after, err := b.c.RequestCounts(ctx)
	if err != nil {
		return result{}, err
	}
	reqs := after.Sub(before).Of(probe.GVR.Resource)
	r.Patches = reqs.Succeeded("PATCH")
	r.FailedRequests = reqs.Failed()
	r.ServerErrors = reqs.ServerErrors()
	r.LoadAverage = loadAverage()
	if waitErr != nil {
		logf("%s: %s: gave up after %.1f s, %.1f s CPU, %.0f MB peak RSS, %d calls, %d writes sent, %d patches made, failed: %s; load average %s",
			scenario, name, r.Seconds, r.CPUSeconds, r.PeakRSSMB, r.Calls, r.Writes, r.Patches, byCode(r.FailedRequests), r.LoadAverage)
		return r, waitErr
	}
	logf("%s: %s: drained in %.1f s, %.1f s CPU, %.0f MB peak RSS, %d calls, %d writes sent, %d patches made, failed: %s; load average %s",
		scenario, name, r.Seconds, r.CPUSeconds, r.PeakRSSMB, r.Calls, r.Writes, r.Patches, byCode(r.FailedRequests), r.LoadAverage)
	return r, p.stop()
}

// clear deletes the objects of a namespace (the harness runs no namespace
// controller to do it for a deleted namespace). One request deletes them
// all unless etcd times it out first (20 000 objects on a busy machine do):
// then again, for those left.
func (b *bench) clear(ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for {
		err := b.dyn.Resource(probe.GVR).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			logf("cannot delete the objects of %s: %v; the contenders after it meet a larger API server", ns, err)
			return
		}
	}
}

// sofar fills in the figures of a contender still at work: time, CPU and
// peak RSS since its start, its writes and calls.
func (r *result) sofar(p *process) error {
	r.Seconds = time.Since(p.started).Seconds()
	cpu, err := cpuTime(p.pid())
	if err != nil {
		return err
	}
	rss, err := peakRSS(p.pid())
	if err != nil {
		return err
	}
	s, err := p.stats()
	if err != nil {
		return err
	}
	r.CPUSeconds, r.PeakRSSMB, r.Writes, r.Calls = cpu.Seconds(), mb(rss), s.Writes, s.Calls
	r.CPUPerObjectMs = r.CPUSeconds * 1000 / float64(r.Objects)
	return nil
}
