package main

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopfgo/kopfgo/e2e/bench/probe"
)

// scale measures a contender with many objects (-scale-n, 100 000 by
// default): the creation burst (throughput, CPU per object, peak RSS), the
// steady RSS with all objects present and idle, a churn phase (-churn-rate
// objects changed per second for -churn, each once, with the RSS sampled
// to show whether it stays flat), and a restart on all the handled objects
// (time to idle, CPU, zero writes and handler calls). Memory per object is
// the steady RSS above the RSS of the contender watching nothing yet.
func (b *bench) scale(ctx context.Context) ([]result, error) {
	var out []result
	for _, name := range b.contenders() {
		rs, err := b.scaleOne(ctx, name)
		out = append(out, rs...)
		if err != nil {
			return out, fmt.Errorf("scale, %s: %w", name, err)
		}
	}
	return out, nil
}

// rssSampleEvery is how often the churn phase samples the contender's RSS.
const rssSampleEvery = 5 * time.Second

func (b *bench) scaleOne(ctx context.Context, name string) ([]result, error) {
	n := b.o.scaleN
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ns, t, p, err := b.setUp(tctx, name, "scale")
	if err != nil {
		return nil, err
	}
	defer p.stop()
	if _, err := p.quiet(ctx, time.Now(), idleWindow, idleTimeout); err != nil {
		return nil, err
	}
	empty, err := currentRSS(p.pid())
	if err != nil {
		return nil, err
	}
	if anon, err := anonRSS(p.pid()); err == nil {
		logf("scale: %s: RSS %.0f MB empty, of which %.0f MB anonymous (the rest: pages of the binary)", name, mb(empty), mb(anon))
	}

	logf("scale: %s: creating %d objects", name, n)
	r := result{Scenario: "scale", Contender: name, Objects: n, EmptyRSSMB: mb(empty)}
	t.phase("value", n)
	ph, err := b.mark(p)
	if err != nil {
		return nil, err
	}
	begin := time.Now()
	if err := b.parallel(ctx, n, func(ctx context.Context, i int) error { return b.create(ctx, ns, i, false) }); err != nil {
		return nil, err
	}
	r.DriverSeconds = time.Since(begin).Seconds()
	last, err := t.wait(ctx, scaleTimeout(n))
	if err != nil {
		return nil, err
	}
	r.Seconds = last.Sub(begin).Seconds()
	r.PerSecond = float64(n) / r.Seconds
	if _, err := ph.finish(ctx, &r, last); err != nil {
		return nil, err
	}
	steady, err := currentRSS(p.pid())
	if err != nil {
		return nil, err
	}
	r.SteadyRSSMB = mb(steady)
	r.KBPerObject = float64(steady-empty) / 1024 / float64(n)
	logf("scale: %s: %.0f objects/s, %.2f ms CPU per object; RSS %.0f MB empty, %.0f MB steady (%.1f KB per object)",
		name, r.PerSecond, r.CPUPerObjectMs, r.EmptyRSSMB, r.SteadyRSSMB, r.KBPerObject)

	if err := b.churn(ctx, t, p, ns, &r); err != nil {
		return []result{r}, err
	}
	if err := p.stop(); err != nil {
		return []result{r}, err
	}
	cancel() // the driver's watch of the namespace is not needed at restart

	restart, err := b.restartOne(ctx, name, ns, n)
	restart.Scenario = "scale-restart"
	return []result{r, restart}, err
}

// churn changes -churn-rate objects a second, each once, for -churn (or
// until every object has changed), sampling the contender's RSS, then waits
// until every change is handled and the contender is idle.
func (b *bench) churn(ctx context.Context, t *tracker, p *process, ns string, r *result) error {
	total := min(b.o.scaleN, int(b.o.churnRate*b.o.churn.Seconds()))
	if total == 0 {
		return nil
	}
	logf("scale: %s: changing %d objects at %g/s", p.name, total, b.o.churnRate)
	t.phase("churn", total)
	ph, err := b.mark(p)
	if err != nil {
		return err
	}
	sample := func() error {
		rss, err := currentRSS(p.pid())
		if err != nil {
			return err
		}
		r.ChurnRSSMB = append(r.ChurnRSSMB, mb(rss))
		return nil
	}
	if err := sample(); err != nil {
		return err
	}
	patch := []byte(`{"spec":{"field":"churn"}}`)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastSample := time.Now()
	begin := time.Now()
	for sent := 0; sent < total; {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		// The objects due by now, so that a slow second is caught up.
		due := min(total, int(b.o.churnRate*time.Since(begin).Seconds()))
		from := sent
		err := b.parallel(ctx, due-from, func(ctx context.Context, i int) error {
			_, err := b.dyn.Resource(probe.GVR).Namespace(ns).Patch(ctx, objectName(from+i), types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		})
		if err != nil {
			return err
		}
		sent = due
		if time.Since(lastSample) >= rssSampleEvery {
			if err := sample(); err != nil {
				return err
			}
			lastSample = time.Now()
		}
	}
	last, err := t.wait(ctx, scaleTimeout(total))
	if err != nil {
		return err
	}
	var churned result
	churned.Objects = total
	if _, err := ph.finish(ctx, &churned, last); err != nil {
		return err
	}
	if err := sample(); err != nil {
		return err
	}
	r.ChurnObjects = total
	r.ChurnCPUPerObjectMs = churned.CPUPerObjectMs
	r.ChurnCalls = churned.Calls
	r.ChurnSeconds = last.Sub(begin).Seconds()
	rss := r.ChurnRSSMB
	logf("scale: %s: churn of %d objects in %.0f s, %.2f ms CPU per object; RSS %.0f → %.0f MB (samples: %v)",
		p.name, total, r.ChurnSeconds, r.ChurnCPUPerObjectMs, rss[0], rss[len(rss)-1], rss)
	return nil
}

// scaleTimeout bounds the wait for n objects: far above what any contender
// needs (at least 20 objects a second), only so that a broken one does not
// hang the run.
func scaleTimeout(n int) time.Duration {
	return max(handledTimeout, time.Duration(n/20)*time.Second)
}

func mb(bytes int64) float64 { return float64(bytes) / (1 << 20) }
