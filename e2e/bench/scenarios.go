package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/kopfgo/kopfgo/e2e/bench/probe"
	"github.com/kopfgo/kopfgo/e2e/cluster"
)

// Bounds of the waits, far above what any contender needs: they only keep a
// broken contender from hanging the run.
const (
	handledTimeout = 10 * time.Minute
	idleTimeout    = 5 * time.Minute
	// idleWindow is how long a contender must stay (nearly) without CPU to
	// count as idle: longer than any pause between its bursts of work.
	idleWindow = time.Second
)

type bench struct {
	o    options
	c    *cluster.Cluster
	dyn  dynamic.Interface
	bins map[string]string
	work string
	// kubeconfig is the contenders' (the driver's is the admin's).
	kubeconfig string
	// round is the round being run (-rounds), from 1.
	round int
	// left are the sets whose objects stay in the API server until the
	// next set's namespace is made (leave, namespace).
	left []leftSet
}

type leftSet struct {
	ns string
	n  int
}

// contenders is the order in which the contenders run in this round: as
// given in odd rounds, reversed in even ones, so that no contender always
// runs on an API server that the one before it has just warmed or loaded.
func (b *bench) contenders() []string {
	order := slices.Clone(b.o.contenders)
	if b.round%2 == 0 {
		slices.Reverse(order)
	}
	return order
}

// name gives each round its own namespaces and files: base in the first
// round, base-2 in the second, and so on.
func (b *bench) name(base string) string {
	// A contender's name may hold what a namespace's may not (kopfgo@REV).
	base = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, base)
	if b.round > 1 {
		return fmt.Sprintf("%s-%d", base, b.round)
	}
	return base
}

func newBench(_ context.Context, o options, c *cluster.Cluster, bins map[string]string, work string) (*bench, error) {
	cfg := c.RESTConfig()
	cfg.QPS, cfg.Burst = -1, 0 // the driver must not be the bottleneck
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &bench{o: o, c: c, dyn: dyn, bins: bins, work: work, kubeconfig: c.Kubeconfig}, nil
}

func (b *bench) start(name, namespace, scenario string) (*process, error) {
	profile := ""
	if b.o.profileDir != "" {
		profile = filepath.Join(b.o.profileDir, b.name(name+"-"+scenario))
	}
	return startContender(b.bins[name], name, b.kubeconfig, namespace,
		filepath.Join(b.work, b.name(name+"-"+scenario)+".log"), profile)
}

// namespace makes a set's namespace once the objects of the sets before it
// are deleted (clear), so that each set meets the API server as the first
// did. The last set's objects are not deleted: the cluster goes with the
// run, and deleting 300 000 took 8 to 17 minutes.
func (b *bench) namespace(ctx context.Context, name string) error {
	for _, s := range b.left {
		b.clear(ctx, s.ns, s.n)
	}
	b.left = nil
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name},
	}}
	_, err := b.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, ns, metav1.CreateOptions{})
	return err
}

// leave has the n objects of namespace ns deleted before the next set
// starts; its caller's processes have stopped by then.
func (b *bench) leave(ns string, n int) { b.left = append(b.left, leftSet{ns, n}) }

func objectName(i int) string { return fmt.Sprintf("bench-%05d", i) }

// object is the workload's object: a kopfexample with no labels or
// annotations of its own, so that its essence is its spec alone; handled
// objects carry the diff-base already.
func object(i int, handled bool) (*unstructured.Unstructured, error) {
	spec := map[string]any{"duration": "1m", "field": "value", "items": []any{"item1", "item2"}}
	meta := map[string]any{"name": objectName(i)}
	if handled {
		db, err := probe.DiffBase(spec)
		if err != nil {
			return nil, err
		}
		meta["annotations"] = map[string]any{probe.DiffBaseAnnotation: db}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": probe.GVR.GroupVersion().String(), "kind": probe.GVK.Kind, "metadata": meta, "spec": spec,
	}}, nil
}

// paced is parallel with at most perSecond calls of do begun per second
// (none: as fast as the driver's concurrency goes). A steady arrival is
// not a burst: a process sees its events one by one rather than queued.
func (b *bench) paced(ctx context.Context, n int, perSecond float64, do func(ctx context.Context, i int) error) error {
	if perSecond <= 0 {
		return b.parallel(ctx, n, do)
	}
	every := time.Duration(float64(time.Second) / perSecond)
	if every <= 0 {
		// Faster than a ticker can tick (a zero period panics): unpaced.
		return b.parallel(ctx, n, do)
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	return b.parallel(ctx, n, func(ctx context.Context, i int) error {
		select {
		case <-tick.C:
			return do(ctx, i)
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// parallel runs do(i) for i in [0, n) with the driver's concurrency.
func (b *bench) parallel(ctx context.Context, n int, do func(ctx context.Context, i int) error) error {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range b.o.creators {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := retried(ctx, func() error { return do(ctx, i) }); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	// Stopped by the caller, it has not done all: say so.
	return errors.Join(append(errs, parent.Err())...)
}

// retried calls do again, a few times, while the API server answers that it
// is overloaded (etcd timing out, 429, 5xx): on a 2-core machine shared with
// the contender, the driver's own requests sometimes are, and the run must
// not end for it. The contender is not the driver: its CPU is not counted
// here.
func retried(ctx context.Context, do func() error) error {
	var err error
	for attempt := range 5 {
		if err = do(); err == nil || !overloaded(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		}
	}
	return err
}

func overloaded(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
		strings.Contains(err.Error(), "etcdserver: request timed out")
}

func (b *bench) create(ctx context.Context, namespace string, i int, handled bool) error {
	obj, err := object(i, handled)
	if err != nil {
		return err
	}
	_, err = b.dyn.Resource(probe.GVR).Namespace(namespace).Create(ctx, obj, metav1.CreateOptions{})
	return err
}

// setUp makes the scenario's namespace for the contender, starts the
// driver's tracker of it (until ctx ends) and the contender, and waits until
// the contender watches. The caller stops the process.
func (b *bench) setUp(ctx context.Context, name, scenario string) (string, *tracker, *process, error) {
	ns := b.name("bench-" + scenario + "-" + name)
	if err := b.namespace(ctx, ns); err != nil {
		return "", nil, nil, err
	}
	t, err := b.watch(ctx, ns)
	if err != nil {
		return "", nil, nil, err
	}
	p, err := b.start(name, ns, scenario)
	if err != nil {
		return "", nil, nil, err
	}
	if _, err := p.waitWatching(time.Minute); err != nil {
		p.stop()
		return "", nil, nil, err
	}
	return ns, t, p, nil
}

// watch starts the driver's tracker of a namespace.
func (b *bench) watch(ctx context.Context, namespace string) (*tracker, error) {
	t := newTracker()
	return t, t.run(ctx, b.dyn, namespace)
}

// phase is the part of a result measured between two points of a running
// contender.
type phase struct {
	p     *process
	cpu   time.Duration
	stats probeStats
}

type probeStats struct{ writes, calls, shardLabels int64 }

func (b *bench) mark(p *process) (phase, error) {
	cpu, err := cpuTime(p.pid())
	if err != nil {
		return phase{}, err
	}
	s, err := p.stats()
	return phase{p: p, cpu: cpu, stats: probeStats{s.Writes, s.Calls, s.ShardLabels}}, err
}

// finish waits until the contender goes idle after `last` and fills in the
// result's CPU, memory, writes and calls since the mark.
func (ph phase) finish(ctx context.Context, r *result, last time.Time) (sample, error) {
	q, err := ph.p.quiet(ctx, last, idleWindow, idleTimeout)
	if err != nil {
		return q, err
	}
	s, err := ph.p.stats()
	if err != nil {
		return q, err
	}
	rss, err := peakRSS(ph.p.pid())
	if err != nil {
		return q, err
	}
	r.CPUSeconds = (q.cpu - ph.cpu).Seconds()
	r.CPUPerObjectMs = r.CPUSeconds * 1000 / float64(r.Objects)
	r.PeakRSSMB = float64(rss) / (1 << 20)
	r.Writes = s.Writes - ph.stats.writes
	r.Calls = s.Calls - ph.stats.calls
	r.WritesPerObject = float64(r.Writes) / float64(r.Objects)
	return q, nil
}

// warmup sends the API server the kinds of requests the scenarios send, so
// that the first contender does not pay for its first requests of the
// resource (caches, codecs, the watch cache of the CRD): without it, the
// floor, which runs first, looked several times slower.
func (b *bench) warmup(ctx context.Context) error {
	const n = 500
	ns := "bench-warmup"
	if err := b.namespace(ctx, ns); err != nil {
		return err
	}
	logf("warming the API server up with %d objects", n)
	ri := b.dyn.Resource(probe.GVR).Namespace(ns)
	return b.parallel(ctx, n, func(ctx context.Context, i int) error {
		if err := b.create(ctx, ns, i, false); err != nil {
			return err
		}
		db, err := probe.DiffBase(map[string]any{"field": "warm"})
		if err != nil {
			return err
		}
		ann, err := probe.AnnotationsPatch(db)
		if err != nil {
			return err
		}
		if _, err := ri.Patch(ctx, objectName(i), types.MergePatchType, ann, metav1.PatchOptions{}); err != nil {
			return err
		}
		_, err = ri.Patch(ctx, objectName(i), types.MergePatchType, probe.StatusPatch(), metav1.PatchOptions{}, "status")
		return err
	})
}

// burstAndUpdates creates N objects as fast as the driver can and waits
// until all are handled; then changes the spec of all of them and waits
// until every update is handled. One contender process serves both.
func (b *bench) burstAndUpdates(ctx context.Context) ([]result, error) {
	var out []result
	for _, name := range b.contenders() {
		rs, err := b.burstOne(ctx, name)
		out = append(out, rs...)
		if err != nil {
			return out, fmt.Errorf("burst, %s: %w", name, err)
		}
	}
	return out, nil
}

func (b *bench) burstOne(ctx context.Context, name string) ([]result, error) {
	n := b.o.n
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ns, t, p, err := b.setUp(ctx, name, "burst")
	if err != nil {
		return nil, err
	}
	defer p.stop()

	logf("burst: %s: creating %d objects", name, n)
	var out []result
	t.phase("value", n)
	ph, err := b.mark(p)
	if err != nil {
		return nil, err
	}
	begin := time.Now()
	if err := b.parallel(ctx, n, func(ctx context.Context, i int) error { return b.create(ctx, ns, i, false) }); err != nil {
		return nil, err
	}
	created := time.Since(begin)
	last, err := t.wait(ctx, handledTimeout)
	if err != nil {
		return nil, err
	}
	r := result{Scenario: "burst", Contender: name, Objects: n, Seconds: last.Sub(begin).Seconds(), DriverSeconds: created.Seconds()}
	r.PerSecond = float64(n) / r.Seconds
	if _, err := ph.finish(ctx, &r, last); err != nil {
		return nil, err
	}
	logf("burst: %s: %.0f objects/s, %.2f ms CPU per object", name, r.PerSecond, r.CPUPerObjectMs)
	if b.o.wants("burst") {
		out = append(out, r)
	}
	if !b.o.wants("updates") {
		return out, nil
	}

	logf("updates: %s: changing the spec of %d objects", name, n)
	t.phase("updated", n)
	if ph, err = b.mark(p); err != nil {
		return out, err
	}
	begin = time.Now()
	patch := []byte(`{"spec":{"field":"updated"}}`)
	err = b.parallel(ctx, n, func(ctx context.Context, i int) error {
		_, err := b.dyn.Resource(probe.GVR).Namespace(ns).Patch(ctx, objectName(i), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return out, err
	}
	updated := time.Since(begin)
	if last, err = t.wait(ctx, handledTimeout); err != nil {
		return out, err
	}
	r = result{Scenario: "updates", Contender: name, Objects: n, Seconds: last.Sub(begin).Seconds(), DriverSeconds: updated.Seconds()}
	r.PerSecond = float64(n) / r.Seconds
	if _, err := ph.finish(ctx, &r, last); err != nil {
		return out, err
	}
	logf("updates: %s: %.0f objects/s, %.2f ms CPU per object", name, r.PerSecond, r.CPUPerObjectMs)
	return append(out, r), p.stop()
}

// latency creates objects at a steady rate and measures, for each, the time
// from sending its creation to seeing it handled.
func (b *bench) latency(ctx context.Context) ([]result, error) {
	var out []result
	for _, name := range b.contenders() {
		r, err := b.latencyOne(ctx, name)
		if err != nil {
			return out, fmt.Errorf("latency, %s: %w", name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (b *bench) latencyOne(ctx context.Context, name string) (result, error) {
	total := int(b.o.rate * b.o.duration.Seconds())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ns, t, p, err := b.setUp(ctx, name, "latency")
	if err != nil {
		return result{}, err
	}
	defer p.stop()
	logf("latency: %s: creating %d objects at %g/s", name, total, b.o.rate)
	t.phase("value", total)
	ph, err := b.mark(p)
	if err != nil {
		return result{}, err
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / b.o.rate))
	defer tick.Stop()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for i := range total {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return result{}, ctx.Err()
		}
		t.creating(objectName(i), time.Now())
		wg.Go(func() {
			if err := b.create(ctx, ns, i, false); err != nil {
				mu.Lock()
				first = cmp(first, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return result{}, first
	}
	last, err := t.wait(ctx, handledTimeout)
	if err != nil {
		return result{}, err
	}
	r := result{Scenario: "latency", Contender: name, Objects: total}
	lat := t.latencies()
	slices.Sort(lat)
	r.P50Ms = ms(percentile(lat, 0.50))
	r.P99Ms = ms(percentile(lat, 0.99))
	r.MaxMs = ms(lat[len(lat)-1])
	if _, err := ph.finish(ctx, &r, last); err != nil {
		return result{}, err
	}
	logf("latency: %s: p50 %.1f ms, p99 %.1f ms", name, r.P50Ms, r.P99Ms)
	return r, p.stop()
}

func cmp(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// restart creates restart-n objects that are already handled, then starts
// each contender on them: it must list them, find nothing to do, and go
// idle without a write or a handler call.
func (b *bench) restart(ctx context.Context) ([]result, error) {
	n := b.o.restartN
	ns := b.name("bench-restart")
	if err := b.namespace(ctx, ns); err != nil {
		return nil, err
	}
	logf("restart: creating %d already handled objects", n)
	if err := b.parallel(ctx, n, func(ctx context.Context, i int) error { return b.create(ctx, ns, i, true) }); err != nil {
		return nil, err
	}
	var out []result
	for _, name := range b.contenders() {
		r, err := b.restartOne(ctx, name, ns, n)
		if err != nil {
			return out, fmt.Errorf("restart, %s: %w", name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (b *bench) restartOne(ctx context.Context, name, ns string, n int) (result, error) {
	p, err := b.start(name, ns, "restart")
	if err != nil {
		return result{}, err
	}
	defer p.stop()
	watching, err := p.waitWatching(idleTimeout)
	if err != nil {
		return result{}, err
	}
	r := result{Scenario: "restart", Contender: name, Objects: n, ListingSeconds: watching.Sub(p.started).Seconds()}
	ph := phase{p: p} // from the process's start: CPU 0, no writes, no calls
	q, err := ph.finish(ctx, &r, watching)
	if err != nil {
		return result{}, err
	}
	r.Seconds = q.at.Sub(p.started).Seconds()
	logf("restart: %s: listed in %.2f s, idle at %.2f s, %.2f s CPU, %d writes, %d calls", name, r.ListingSeconds, r.Seconds, r.CPUSeconds, r.Writes, r.Calls)
	return r, p.stop()
}
