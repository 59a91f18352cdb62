package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

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
	if err := fixedSeats(ctx, c, "bench-operators", "contender"); err != nil {
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
	b.leave(ns, n)
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

// clearPage is how many objects one request of clear deletes: the API
// server deletes a collection one object at a time, and 20 000 at once
// outlasted its 60 s request timeout on a busy machine.
const clearPage = 2000

// clear deletes the n objects of a namespace (the harness runs no namespace
// controller to do it for a deleted namespace), so that the next contender
// or set meets the API server as this one did: its watch cache keeps about
// 16 KB of heap per object, and two sets of 300 000 do not fit in 24 GB. It
// gives up after n/clearPage pages and a few more (an object with a
// finalizer stays however often it is deleted), or after 5 minutes without
// a page deleted, and says so: a set left behind costs memory, not results.
func (b *bench) clear(ctx context.Context, ns string, n int) {
	res := b.dyn.Resource(probe.GVR).Namespace(ns)
	start, progress := time.Now(), time.Now()
	var err error
	for pages := 0; pages <= n/clearPage+2 && time.Since(progress) < 5*time.Minute && ctx.Err() == nil; {
		if err = retried(ctx, func() error {
			return res.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{Limit: clearPage})
		}); err != nil {
			select { // a refused connection, say: not again at once
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		pages, progress = pages+1, time.Now()
		l, lerr := res.List(ctx, metav1.ListOptions{Limit: 1})
		if lerr == nil && len(l.Items) == 0 {
			logf("deleted the objects of %s in %.0fs", ns, time.Since(start).Seconds())
			return
		}
		err = lerr
	}
	if ctx.Err() != nil {
		return // the run is ending: nothing comes after
	}
	if err == nil {
		err = errors.New("some remain after every page was deleted")
	}
	logf("cannot delete the objects of %s: %v; the contenders after it meet a larger API server", ns, err)
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

// contenderShares are the nominal shares of the contenders' priority
// level: with the default levels' 245 shares and -shed-inflight 20 plus
// -shed-mutating 10, about 19 of the 30 seats, what the service accounts'
// level (workload-low) borrows up to once it is busy.
const contenderShares = 400

// fixedSeats puts the contenders' service account in a priority level of
// its own whose seats are fixed: none lent while it is idle, none borrowed.
// In workload-low, where service accounts go by default, APF lends an idle
// level's seats away and gives them back only after 10-15 s of demand, so
// whichever contender ran first on the round's fresh cluster drained its
// first seconds at 2-3 seats, and the second found the level warm.
func fixedSeats(ctx context.Context, c *cluster.Cluster, namespace, account string) error {
	k, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	const name = "bench-contenders"
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](contenderShares),
				LendablePercent:          ptr.To[int32](0),
				BorrowingLimitPercent:    ptr.To[int32](0),
				// workload-low's queues: the same shedding as before.
				LimitResponse: flowcontrolv1.LimitResponse{
					Type:    flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 128, HandSize: 6, QueueLengthLimit: 50},
				},
			},
		},
	}
	if _, err := k.FlowcontrolV1().PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the contenders' priority level: %w", err)
	}
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: name},
			MatchingPrecedence:         500, // before service-accounts (9000)
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount,
					ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: namespace, Name: account}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
					ClusterScope: true, Namespaces: []string{"*"}}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
			}},
		},
	}
	if _, err := k.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the contenders' flow schema: %w", err)
	}
	return nil
}
