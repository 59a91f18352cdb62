package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/kopfgo/kopfgo/e2e/cluster"
	"github.com/kopfgo/kopfgo/e2e/faultproxy"
)

// repoRoot is the kopfgo checkout, found from this file's location.
var repoRoot = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}()

var kexGVR = schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfexamples"}

const namespace = "chaos"

// The fault kinds, in the order the schedule cycles through them. Kills
// come often: they are what the duplicates are measured against.
const (
	FaultKill      = "sigkill"
	FaultTerm      = "sigterm"
	FaultAPIServer = "apiserver-restart"
	FaultEtcd      = "etcd-restart"
	FaultStall     = "proxy-stall"
	FaultReset     = "proxy-reset"
	FaultDrop      = "proxy-drop"
	Fault429       = "proxy-429"
	Fault5xx       = "proxy-5xx"
	// FaultBacklogKill is the SIGKILL of the backlog round (Config.Backlog),
	// outside the schedule.
	FaultBacklogKill = "backlog-sigkill"
)

var schedule = []string{
	FaultKill, Fault5xx, FaultKill, FaultTerm, FaultStall, FaultKill, FaultAPIServer, FaultKill,
	FaultReset, FaultKill, Fault429, FaultTerm, FaultKill, FaultEtcd, FaultKill, FaultDrop,
}

// Config sets up a run.
type Config struct {
	// N is the number of objects (default 2000).
	N int
	// FaultEvery is the pause between faults (default 3 s).
	FaultEvery time.Duration
	// Workers create, patch and delete objects concurrently (default 20).
	Workers int
	// Rate is the objects created per second; the default spreads the
	// creations over one cycle of the fault schedule, so that every kind of
	// fault strikes while objects are in flight.
	Rate float64
	// Quiescence bounds the wait for the last objects after the last fault
	// (default 5 min).
	Quiescence time.Duration
	// Dir keeps the journal and the operator's log; empty: a temporary
	// directory, removed unless the run fails.
	Dir string
	// Logf reports progress; nil is silent.
	Logf func(format string, args ...any)

	// Backlog objects of the first round (at most N) are created before the
	// operator starts, none handled: the backlog an operator meets after
	// downtime, a failover or a shard handover. Once a tenth of them are
	// handled, the operator is SIGKILLed (FaultBacklogKill) with the rest
	// pending; the schedule's faults follow. 0: no backlog round.
	Backlog int

	// Faults are the kinds of fault injected, in the schedule's order; nil
	// injects all of them, an empty non-nil list none (for measuring the
	// operator undisturbed).
	Faults []string
	// Rounds runs the N objects this many times, one round after the
	// other, each through creation, update and deletion (default 3);
	// faults strike during the first round only. The operator's live heap is
	// read after each round (Report.HeapRoundsMB): a heap that grows from
	// round to round keeps something per object. The memory invariant
	// needs three rounds or more: the second warms up the process that
	// runs the rest (see report.go, memory).
	Rounds int
	// HeapProfiles makes the operator write a heap profile with every
	// reading of its live heap, into the run's directory (profiles/), with
	// runtime.MemProfileRate at ProfileRate bytes (default 512).
	HeapProfiles bool
	ProfileRate  int
}

func (c *Config) defaults() {
	if c.N <= 0 {
		c.N = 2000
	}
	if c.FaultEvery <= 0 {
		c.FaultEvery = 3 * time.Second
	}
	if c.Workers <= 0 {
		c.Workers = 20
	}
	if c.Rate <= 0 {
		c.Rate = float64(c.N) / (float64(len(schedule)) * c.FaultEvery.Seconds())
	}
	if c.Quiescence <= 0 {
		c.Quiescence = 5 * time.Minute
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	if c.Rounds <= 0 {
		c.Rounds = 3
	}
	c.Backlog = max(0, min(c.Backlog, c.N))
}

// scheduleOf is the fault schedule restricted to the kinds asked for (nil:
// all), in the schedule's order.
func scheduleOf(kinds []string) ([]string, error) {
	if kinds == nil {
		return schedule, nil
	}
	var s []string
	for _, k := range kinds {
		if !slices.Contains(schedule, k) {
			return nil, fmt.Errorf("no fault kind %q (known: %s)", k, strings.Join(FaultKinds(), ", "))
		}
	}
	for _, k := range schedule {
		if slices.Contains(kinds, k) {
			s = append(s, k)
		}
	}
	return s, nil
}

// FaultKinds are the kinds of fault a run can inject.
func FaultKinds() []string {
	var kinds []string
	for _, k := range schedule {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// run is one chaos run in progress.
type run struct {
	cfg      Config
	schedule []string // the faults injected, in order
	dir      string
	cluster  *cluster.Cluster
	proxy    *faultproxy.Proxy
	dyn      dynamic.Interface
	journal  *journal
	op       *supervisor

	mu     sync.Mutex
	stage  map[string]int // object name → stage reached
	faults map[string]int
	done   []chan struct{} // per round, closed when its objects are gone
	// snapshots are the objects at each operator's death, by its pid.
	snapshots map[int]snapshot
	gone      atomic.Int64

	lastFaultEnd time.Time
	// backlogKill is what the backlog round's SIGKILL struck.
	backlogKill backlogKill
}

// backlogKill is the backlog round's SIGKILL: the process it killed and
// how many of the backlog's creations had succeeded then.
type backlogKill struct {
	pid, created int
}

// The stages of an object's life, as the driver moves it along.
const (
	stageCreated = iota + 1
	stageUpdateSent
	stageDeleteSent
	stageGone
)

// Run does the whole run and returns its report; the error is for a run
// that could not be done at all, the report's Failures for broken invariants.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	sched, err := scheduleOf(cfg.Faults)
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, schedule: sched, stage: map[string]int{}, faults: map[string]int{}, snapshots: map[int]snapshot{}}
	for range cfg.Rounds {
		r.done = append(r.done, make(chan struct{}))
	}
	dir := cfg.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "kopfgo-chaos-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r.dir = dir

	cfg.Logf("chaos: starting a cluster")
	c, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(dir, "cluster"), Logf: cluster.Logf(cfg.Logf)})
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	r.cluster = c
	if err := c.ApplyFile(ctx, filepath.Join(repoRoot, "examples", "crd.yaml")); err != nil {
		return nil, err
	}
	if err := c.Apply(ctx, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: "+namespace+"}\n")); err != nil {
		return nil, err
	}
	driverCfg := c.RESTConfig()
	driverCfg.QPS, driverCfg.Burst = 500, 1000 // the driver must not be the bottleneck
	if r.dyn, err = dynamic.NewForConfig(driverCfg); err != nil {
		return nil, err
	}
	if r.proxy, err = faultproxy.Start(c.RESTConfig()); err != nil {
		return nil, err
	}
	defer r.proxy.Close()
	if r.journal, err = openJournal(filepath.Join(dir, "journal")); err != nil {
		return nil, err
	}
	defer r.journal.Close()

	if cfg.Backlog > 0 {
		cfg.Logf("chaos: creating a backlog of %d objects before the operator starts", cfg.Backlog)
		r.createNames(ctx, backlogNames(cfg.Backlog), nil)
	}

	cfg.Logf("chaos: building the operator")
	bin := filepath.Join(dir, "chaos-operator")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./e2e/operators/chaos/cmd")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the chaos operator: %w\n%s", err, out)
	}
	kubeconfig := filepath.Join(dir, "operator-kubeconfig")
	if err := os.WriteFile(kubeconfig, r.proxy.Kubeconfig(c.Token, namespace), 0o600); err != nil {
		return nil, err
	}
	env := []string{"KUBECONFIG=" + kubeconfig, "KOPFGO_CHAOS_JOURNAL=" + r.journal.path}
	if cfg.HeapProfiles {
		profiles := filepath.Join(dir, "profiles")
		if err := os.MkdirAll(profiles, 0o755); err != nil {
			return nil, err
		}
		env = append(env, "KOPFGO_CHAOS_HEAP_PROFILES="+profiles)
		if cfg.ProfileRate > 0 {
			env = append(env, "KOPFGO_CHAOS_MEM_PROFILE_RATE="+strconv.Itoa(cfg.ProfileRate))
		}
	}
	r.op, err = startSupervisor(bin, filepath.Join(dir, "operator.log"), env, r.journal, r.takeSnapshot)
	if err != nil {
		return nil, err
	}
	defer r.op.stop()

	informerCtx, stopInformer := context.WithCancel(ctx)
	defer stopInformer()
	if err := r.watch(informerCtx); err != nil {
		return nil, err
	}
	if cfg.Backlog > 0 {
		if err := r.killInBacklog(ctx); err != nil {
			return nil, err
		}
	}
	time.Sleep(2 * time.Second) // the operator's startup (after the backlog's kill: its successor's), before the baseline memory
	rssBefore := r.op.rss()
	heapFresh := r.heapLive()

	started := time.Now()
	r.mu.Lock()
	r.lastFaultEnd = started // without faults, quiescence counts from the start
	r.mu.Unlock()
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		r.inject(ctx)
	}()
	r.create(ctx, 0)

	<-faultsDone
	cfg.Logf("chaos: last fault over; waiting for quiescence")
	quiescence, err := r.wait(ctx, 0)
	if err != nil {
		return nil, err
	}
	// The operator's live heap after each round, once idle. The rounds
	// after the chaos round run without faults on the process that
	// finished it; the reading after the second round is the baseline of
	// the memory invariant, the process having grown then to what that
	// workload needs, once (see report.go, memory); the rounds after it
	// must leave it where it was.
	rounds := []heapReading{r.settledHeap()}
	for round := 1; round < cfg.Rounds && quiescence >= 0; round++ {
		cfg.Logf("chaos: round %d done, live heap %.1f MB; round %d", round, float64(rounds[round-1].bytes)/(1<<20), round+1)
		r.create(ctx, round)
		if d, err := r.wait(ctx, round); err != nil {
			return nil, err
		} else if d < 0 {
			quiescence = d
		}
		rounds = append(rounds, r.settledHeap())
	}
	rssAfter := r.settledRSS(rssBefore)
	took := time.Since(started)
	r.op.stop()

	rep, err := r.report(quiescence, took, memory{rssBefore: rssBefore, rssAfter: rssAfter, heapFresh: heapFresh.bytes, rounds: rounds})
	if err != nil {
		return nil, err
	}
	if len(rep.Failures) == 0 && cfg.Dir == "" {
		os.RemoveAll(dir)
	} else {
		rep.Dir = dir
	}
	return rep, nil
}

// wait waits for the objects of a round to be gone and returns the time
// since the end of the last fault; -1 if they are not gone within
// Config.Quiescence.
func (r *run) wait(ctx context.Context, round int) (time.Duration, error) {
	quiet := time.NewTimer(r.cfg.Quiescence)
	defer quiet.Stop()
	select {
	case <-r.done[round]:
		r.mu.Lock()
		defer r.mu.Unlock()
		return time.Since(r.lastFaultEnd), nil
	case <-quiet.C:
		return -1, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// watch follows the objects and moves each along: once its creation is
// handled (a diff-base), it is updated; once the update is handled, deleted.
func (r *run) watch(ctx context.Context) error {
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(r.dyn, 0, namespace, nil)
	inf := f.ForResource(kexGVR).Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.advance(ctx, obj) },
		UpdateFunc: func(_, obj any) { r.advance(ctx, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				r.setGone(u.GetName())
			}
		},
	})
	if err != nil {
		return err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return errors.New("the driver's informer never synced")
	}
	return nil
}

func (r *run) setGone(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stage[name] == stageGone {
		return
	}
	r.stage[name] = stageGone
	if n := r.gone.Add(1); n%int64(r.cfg.N) == 0 && n/int64(r.cfg.N) <= int64(len(r.done)) {
		close(r.done[n/int64(r.cfg.N)-1])
	}
}

func (r *run) advance(ctx context.Context, obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	name := u.GetName()
	base := u.GetAnnotations()["kopf.zalando.org/last-handled-configuration"]
	r.mu.Lock()
	st := r.stage[name]
	next := 0
	switch {
	case st == stageCreated && base != "":
		next = stageUpdateSent
	case st == stageUpdateSent && strings.Contains(base, `"field":"v2"`):
		next = stageDeleteSent
	}
	if next != 0 {
		r.stage[name] = next
	}
	r.mu.Unlock()
	switch next {
	case stageUpdateSent:
		go r.retry(ctx, "update "+name, func() error {
			_, err := r.dyn.Resource(kexGVR).Namespace(namespace).Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"field":"v2"}}`), metav1.PatchOptions{})
			return err
		})
	case stageDeleteSent:
		go r.retry(ctx, "delete "+name, func() error {
			err := r.dyn.Resource(kexGVR).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
	}
}

// retry repeats a driver's request through the cluster's outages.
func (r *run) retry(ctx context.Context, what string, f func() error) {
	for ctx.Err() == nil {
		err := f()
		if err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// create makes the N objects of a round, Workers at a time, at Rate; the
// first round's backlog (Config.Backlog) exists already.
func (r *run) create(ctx context.Context, round int) {
	var names []string
	for i := range r.cfg.N {
		if round > 0 || i >= r.cfg.Backlog {
			names = append(names, objectName(round*r.cfg.N+i))
		}
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / r.cfg.Rate))
	defer tick.Stop()
	r.createNames(ctx, names, tick.C)
	r.cfg.Logf("chaos: %d objects created", len(names))
}

// backlogNames are the names of the first round's first n objects.
func backlogNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = objectName(i)
	}
	return names
}

// createNames creates the objects, Workers at a time, each after a tick
// (nil: as fast as they go).
func (r *run) createNames(ctx context.Context, names []string, tick <-chan time.Time) {
	queue := make(chan string)
	var wg sync.WaitGroup
	for range r.cfg.Workers {
		wg.Go(func() {
			for name := range queue {
				obj := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
					"metadata": map[string]any{"name": name},
					"spec":     map[string]any{"field": "v1"},
				}}
				r.mu.Lock()
				r.stage[name] = stageCreated
				r.mu.Unlock()
				r.retry(ctx, "create "+name, func() error {
					_, err := r.dyn.Resource(kexGVR).Namespace(namespace).Create(ctx, obj, metav1.CreateOptions{})
					if apierrors.IsAlreadyExists(err) {
						return nil
					}
					return err
				})
			}
		})
	}
	for _, name := range names {
		if tick != nil {
			select {
			case <-tick:
			case <-ctx.Done():
			}
		}
		queue <- name
	}
	close(queue)
	wg.Wait()
}

// killInBacklog SIGKILLs the operator once a tenth of the backlog's
// creations have succeeded (the journal's "ret create" lines), with the
// rest pending: what ran again after it must have been in flight at the
// death (the snapshot the supervisor takes), as after any other kill.
func (r *run) killInBacklog(ctx context.Context) error {
	want := max(1, r.cfg.Backlog/10)
	deadline := time.Now().Add(5 * time.Minute)
	for created := 0; created < want; created = r.journal.count("ret create ") {
		if time.Now().After(deadline) {
			return fmt.Errorf("the operator handled %d of the backlog's %d objects within 5 minutes; wanted %d before the kill", created, r.cfg.Backlog, want)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	pid := r.op.pid()
	r.journal.mark("fault", FaultBacklogKill)
	r.op.signal(syscall.SIGKILL)
	created := r.journal.count("ret create ")
	r.journal.mark("fault-end", FaultBacklogKill)
	r.mu.Lock()
	r.faults[FaultBacklogKill]++
	r.lastFaultEnd = time.Now()
	r.backlogKill = backlogKill{pid: pid, created: created}
	r.mu.Unlock()
	r.cfg.Logf("chaos: %s with %d of the backlog's %d objects created", FaultBacklogKill, created, r.cfg.Backlog)
	return nil
}

// objectName is the name of the i-th object of the run.
func objectName(i int) string { return fmt.Sprintf("kex-%05d", i) }

// inject runs the fault schedule until most objects are through (at least
// one full cycle of the schedule, so that every kind is injected).
func (r *run) inject(ctx context.Context) {
	if len(r.schedule) == 0 {
		return
	}
	for i := 0; ; i++ {
		select {
		case <-time.After(r.cfg.FaultEvery):
		case <-ctx.Done():
			return
		}
		// The last fault strikes with a quarter of the objects still to go,
		// so that the quiescence measured after it is the recovery's.
		if i >= len(r.schedule) && r.gone.Load() >= int64(r.cfg.N)*3/4 {
			return
		}
		if i >= 4*len(r.schedule) {
			return // the workload is stuck: the report will say so
		}
		kind := r.schedule[i%len(r.schedule)]
		r.journal.mark("fault", kind)
		r.fault(ctx, kind)
		r.journal.mark("fault-end", kind)
		r.mu.Lock()
		r.faults[kind]++
		r.lastFaultEnd = time.Now()
		r.mu.Unlock()
		r.cfg.Logf("chaos: %s (%d/%d objects through)", kind, r.gone.Load(), r.cfg.N)
	}
}

func (r *run) fault(ctx context.Context, kind string) {
	burst := func(rule *faultproxy.Rule, d time.Duration) {
		r.proxy.Add(rule)
		time.Sleep(d)
		r.proxy.Remove(rule)
	}
	switch kind {
	case FaultKill:
		r.op.signal(syscall.SIGKILL)
	case FaultTerm:
		r.op.signal(syscall.SIGTERM)
	case FaultAPIServer:
		r.cluster.StopAPIServer()
		time.Sleep(time.Second)
		r.cluster.StartAPIServer(ctx)
	case FaultEtcd:
		r.cluster.StopEtcd()
		time.Sleep(time.Second)
		r.cluster.StartEtcd(ctx)
	case FaultStall:
		burst(&faultproxy.Rule{Action: faultproxy.Stall, Delay: 5 * time.Second}, 3*time.Second)
	case FaultReset:
		burst(&faultproxy.Rule{Action: faultproxy.Reset, Match: func(*http.Request) bool { return rand.IntN(3) == 0 }}, 3*time.Second)
	case FaultDrop:
		burst(&faultproxy.Rule{Action: faultproxy.Drop, Match: func(*http.Request) bool { return rand.IntN(3) == 0 }}, 3*time.Second)
	case Fault429:
		burst(&faultproxy.Rule{Status: 429, RetryAfter: true, Match: func(*http.Request) bool { return rand.IntN(2) == 0 }}, 3*time.Second)
	case Fault5xx:
		burst(&faultproxy.Rule{Status: 500, Match: func(*http.Request) bool { return rand.IntN(3) == 0 }}, 2*time.Second)
		burst(&faultproxy.Rule{Status: 503, Match: func(*http.Request) bool { return rand.IntN(3) == 0 }}, 2*time.Second)
	}
}

// journal is the append-only record both the operator and the driver write.
type journal struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

func openJournal(path string) (*journal, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &journal{path: path, f: f}, nil
}

// mark appends a driver's line: "EVENT KIND - - PID".
func (j *journal) mark(event, kind string, pid ...int) {
	p := 0
	if len(pid) > 0 {
		p = pid[0]
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	fmt.Fprintf(j.f, "%s %s - - %d\n", event, kind, p)
	j.f.Sync()
}

func (j *journal) Close() error { return j.f.Close() }

// count is how many lines of the journal begin with prefix.
func (j *journal) count(prefix string) int {
	data, err := os.ReadFile(j.path)
	if err != nil {
		return 0
	}
	n := 0
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// supervisor keeps the operator running: restarted at once whenever it
// exits, until stop.
type supervisor struct {
	bin, logPath string
	env          []string
	journal      *journal
	// died is called when the operator has exited unasked, before it is
	// started again.
	died     func(pid int)
	mu       sync.Mutex
	cmd      *exec.Cmd
	stopping bool
	exited   chan struct{}
	starts   int
}

func startSupervisor(bin, logPath string, env []string, j *journal, died func(pid int)) (*supervisor, error) {
	s := &supervisor{bin: bin, logPath: logPath, env: env, journal: j, died: died}
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *supervisor) start() error {
	logf, err := os.OpenFile(s.logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, "run", "-n", namespace, "--standalone", "--verbose", "--log-format=full")
	cmd.Env = append(os.Environ(), s.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting the operator: %w", err)
	}
	exited := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.starts++
	s.mu.Unlock()
	s.journal.mark("start", "operator", cmd.Process.Pid)
	began := time.Now()
	go func() {
		cmd.Wait()
		logf.Close()
		s.journal.mark("exit", "operator", cmd.Process.Pid)
		close(exited)
		s.mu.Lock()
		stopping := s.stopping
		s.mu.Unlock()
		if !stopping {
			s.died(cmd.Process.Pid)
			if time.Since(began) < time.Second {
				time.Sleep(time.Second) // a crash loop: restarted at once, but not in a busy loop
			}
			for s.start() != nil {
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()
	return nil
}

func (s *supervisor) signal(sig syscall.Signal) {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	s.journal.mark("signal-"+strings.ToLower(sig.String()), "operator", cmd.Process.Pid)
	cmd.Process.Signal(sig)
}

func (s *supervisor) stop() {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return
	}
	s.stopping = true
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
}

// pid is the running operator's process id.
func (s *supervisor) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.Process.Pid
}

// rss is the running operator's resident set in bytes (0 if unknown).
func (s *supervisor) rss() int64 {
	s.mu.Lock()
	pid := s.cmd.Process.Pid
	s.mu.Unlock()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// heapReading is the live heap of the operator process pid.
type heapReading struct {
	bytes int64
	pid   int
}

// settledHeap reads the idle operator's live heap every 5 seconds until it
// stops shrinking (by 2%), for at most a minute: for a few seconds after
// the last object is gone the operator still holds the states of the last
// ones, until their workers go idle.
func (r *run) settledHeap() heapReading {
	h := r.heapLive()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		time.Sleep(5 * time.Second)
		next := r.heapLive()
		if next.pid != h.pid || next.bytes >= h.bytes*98/100 {
			return next
		}
		h = next
	}
	return h
}

// heapLive asks the running operator for its live Go heap (SIGUSR1; see
// e2e/operators/chaos) and reads the answer from the journal; 0 bytes if
// none comes within 15 seconds.
func (r *run) heapLive() heapReading {
	pid := r.op.pid()
	info, err := os.Stat(r.journal.path)
	if err != nil {
		return heapReading{pid: pid}
	}
	offset := info.Size()
	r.op.signal(syscall.SIGUSR1)
	want := fmt.Sprintf(" %d", pid)
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		data, err := os.ReadFile(r.journal.path)
		if err != nil || int64(len(data)) <= offset {
			continue
		}
		for _, line := range strings.Split(string(data[offset:]), "\n") {
			if rest, ok := strings.CutPrefix(line, "mem heap-live -/- "); ok && strings.HasSuffix(line, want) {
				n, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
				return heapReading{bytes: n, pid: pid}
			}
		}
	}
	return heapReading{pid: pid}
}

// settledRSS waits up to 150 seconds for the idle operator's RSS to come
// back within 10% of before: Go returns freed memory to the system only
// after a collection has shrunk the heap goal, and an idle process collects
// only when the runtime forces it, every two minutes; the first reading
// after a burst overstates what is held. The RSS is reported, not checked.
func (r *run) settledRSS(before int64) int64 {
	rss := r.op.rss()
	start := time.Now()
	next := start
	for deadline := start.Add(150 * time.Second); (rss == 0 || rss > before*110/100) && time.Now().Before(deadline); {
		if time.Now().After(next) {
			r.cfg.Logf("chaos: idle operator RSS %.1f MB after %s (baseline %.1f MB)", float64(rss)/(1<<20), time.Since(start).Round(time.Second), float64(before)/(1<<20))
			next = next.Add(15 * time.Second)
		}
		time.Sleep(2 * time.Second)
		rss = r.op.rss()
	}
	r.cfg.Logf("chaos: idle operator RSS %.1f MB after %s", float64(rss)/(1<<20), time.Since(start).Round(time.Second))
	return rss
}
