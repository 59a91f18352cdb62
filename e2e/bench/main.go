// Command bench measures kopfgo against a floor and a peer on a local
// cluster: the floor is a bare client-go program doing only the writes that
// cannot be avoided, the peer a controller-runtime controller doing the
// same writes, and kopfgo an operator with a create and an update handler.
// They run one after another, as separate processes, on the same API server
// and the same workload; their CPU time and peak RSS are read from /proc,
// their writes and handler calls counted by the same probe, and when they
// are done is judged from the cluster by the same predicate. Every figure is
// also given as a ratio to the floor's.
//
//	go run ./e2e/bench                      # everything (make bench)
//	go run ./e2e/bench -n 200 -scenarios burst,updates -restart-n 1000
//	go run ./e2e/bench -scenarios backlog,backlog-shed -backlog-n 10000
//	go run ./e2e/bench -rounds 3 -contenders floor,kopfgo@a83e75b,kopfgo  # before and after
//
// The API server is shared with anything else running on the machine, so
// figures are noisy: compare ratios within one run, not absolute figures
// across runs.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kopfgo/kopfgo/e2e/cluster"
)

// repoRoot is the kopfgo checkout, found from this file's location.
var repoRoot = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}()

// allScenarios in the order they run and print; scale runs only when asked
// for (-scenarios scale): with 100 000 objects it takes most of an hour;
// scaleout (kopfgo's sharded replicas) too, being kopfgo's alone; backlog
// and backlog-shed too (tens of thousands of objects, and a cluster of
// their own for the latter).
var allScenarios = []string{"burst", "updates", "latency", "restart", "scale", "scale-restart", "scaleout", "backlog", "backlog-shed"}

var defaultScenarios = []string{"burst", "updates", "latency", "restart"}

// runnable are the scenarios -scenarios names: scale-restart comes with
// scale.
var runnable = []string{"burst", "updates", "latency", "restart", "scale", "scaleout", "backlog", "backlog-shed"}

type options struct {
	n          int
	restartN   int
	rate       float64
	duration   time.Duration
	scenarios  []string
	contenders []string
	creators   int
	out        string
	profileDir string
	workDir    string
	keep       bool
	rounds     int
	scaleN     int
	churnRate  float64
	churn      time.Duration
	backlogN   int
	// backlogWait bounds the wait for a backlog to drain; 0: scaleTimeout.
	backlogWait time.Duration
	// shedInflight and shedMutating are the API server's in-flight limits
	// in the backlog-shed scenario.
	shedInflight, shedMutating int
	// shards are the shards of the scale-out scenario (-shards).
	shards int
	// replicas are the scale-out scenario's replica counts (-replicas);
	// its ratios are to one replica's, so without 1 it has none.
	replicas []int
	// scaleOutRate paces the scale-out's creations (objects per second); 0
	// creates them at once, as fast as -creators requests go.
	scaleOutRate float64
	// prebuilt are contenders' binaries given rather than built (-prebuilt).
	prebuilt map[string]string
}

func main() {
	var o options
	var scenarios, contenders, prebuilt, replicas string
	flag.IntVar(&o.n, "n", 2000, "objects in the burst and updates scenarios")
	flag.IntVar(&o.restartN, "restart-n", 10000, "existing, already handled objects in the restart scenario")
	flag.Float64Var(&o.rate, "rate", 20, "objects created per second in the latency scenario")
	flag.DurationVar(&o.duration, "duration", 30*time.Second, "how long the latency scenario creates objects")
	flag.StringVar(&scenarios, "scenarios", strings.Join(defaultScenarios, ","), "comma-separated scenarios to run: "+strings.Join(runnable, ", "))
	flag.IntVar(&o.scaleN, "scale-n", 100000, "objects in the scale scenario")
	flag.Float64Var(&o.churnRate, "churn-rate", 100, "objects changed per second in the scale scenario's churn phase (each once)")
	flag.DurationVar(&o.churn, "churn", 3*time.Minute, "how long the scale scenario's churn phase changes objects")
	flag.IntVar(&o.backlogN, "backlog-n", 20000, "unhandled objects present before the contender starts in the backlog scenarios")
	flag.DurationVar(&o.backlogWait, "backlog-timeout", 0, "give a contender up after this long in the backlog scenarios (default: 10 minutes, or N/20 seconds if longer)")
	flag.IntVar(&o.shedInflight, "shed-inflight", 20, "the API server's --max-requests-inflight in the backlog-shed scenario")
	flag.IntVar(&o.shedMutating, "shed-mutating", 10, "the API server's --max-mutating-requests-inflight in the backlog-shed scenario")
	flag.StringVar(&contenders, "contenders", strings.Join(contenderNames, ","), "comma-separated contenders to run; the floor is needed for ratios")
	flag.IntVar(&o.shards, "shards", 12, "shards in the scaleout scenario, a multiple of every -replicas count (each replica holds an equal share; each shard is one watch of a replica)")
	flag.StringVar(&replicas, "replicas", "1,2,4", "comma-separated replica counts of the scaleout scenario; its ratios are to one replica, so keep 1 among them")
	flag.Float64Var(&o.scaleOutRate, "scaleout-rate", 0, "objects created per second in the scaleout scenario (0: all at once, as fast as -creators requests go); a steady arrival instead of a burst")
	flag.IntVar(&o.creators, "creators", 16, "concurrent requests of the driver when it creates or updates objects")
	flag.StringVar(&o.out, "json", "bench.json", "write the results here as JSON (empty: do not)")
	flag.StringVar(&o.profileDir, "profile", "", "write CPU and heap profiles of every contender run to this directory (profiling costs some CPU itself)")
	flag.StringVar(&o.workDir, "work", "", "directory for the contenders' binaries and logs (default: a temporary one, removed unless -keep)")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory and print its path")
	flag.StringVar(&prebuilt, "prebuilt", "", "comma-separated name=path: run these contenders from the given binaries instead of building them (a build of another commit, to compare)")
	flag.IntVar(&o.rounds, "rounds", 1, "run the scenarios this many times, the contenders taking turns, and report each figure's median over the rounds")
	flag.Parse()
	o.scenarios = split(scenarios)
	o.contenders = split(contenders)
	var err error
	if o.replicas, err = counts(replicas); err != nil {
		fmt.Fprintln(os.Stderr, "bench: -replicas:", err)
		os.Exit(2)
	}
	o.prebuilt = map[string]string{}
	for _, nb := range split(prebuilt) {
		name, path, _ := strings.Cut(nb, "=")
		o.prebuilt[name] = path
	}
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err = run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// counts parses a comma-separated list of whole numbers.
func counts(s string) ([]int, error) {
	var out []int
	for _, f := range split(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func (o options) validate() error {
	for _, s := range o.scenarios {
		if !slices.Contains(runnable, s) {
			return fmt.Errorf("unknown scenario %q: choose from %s", s, strings.Join(runnable, ", "))
		}
	}
	for _, c := range o.contenders {
		if rev, ok := strings.CutPrefix(c, "kopfgo@"); ok && rev != "" {
			continue
		}
		if !slices.Contains(contenderNames, c) && !slices.Contains(extraContenders, c) {
			return fmt.Errorf("unknown contender %q: choose from %s, or kopfgo@REV (kopfgo's contender as of a git revision)", c, strings.Join(append(contenderNames, extraContenders...), ", "))
		}
	}
	for name, path := range o.prebuilt {
		if !slices.Contains(o.contenders, name) || path == "" {
			return fmt.Errorf("-prebuilt %s=%s: give name=path for a contender that runs", name, path)
		}
	}
	if len(o.scenarios) == 0 || len(o.contenders) == 0 {
		return fmt.Errorf("nothing to run: give at least one scenario and one contender")
	}
	if o.n <= 0 || o.restartN <= 0 || o.rate <= 0 || o.duration <= 0 || o.creators <= 0 || o.rounds <= 0 || o.scaleN <= 0 || o.churnRate < 0 || o.churn < 0 ||
		o.backlogN <= 0 || o.shedInflight <= 0 || o.shedMutating <= 0 || o.shards <= 0 {
		return fmt.Errorf("-n, -restart-n, -rate, -duration, -creators, -rounds, -scale-n, -backlog-n, -shed-inflight, -shed-mutating and -shards must be positive, -churn-rate and -churn not negative")
	}
	if len(o.replicas) == 0 || o.scaleOutRate < 0 {
		return fmt.Errorf("-replicas must name at least one count, and -scaleout-rate must not be negative")
	}
	for _, r := range o.replicas {
		if r <= 0 || o.shards%r != 0 {
			return fmt.Errorf("-replicas %d with -shards %d: give positive counts that divide the shards, so that each replica holds an equal share", r, o.shards)
		}
	}
	return nil
}

// contenderNames in the order they run: the floor first, so that the others'
// ratios are known as soon as they finish.
// kopfgo-metrics is kopfgo's contender with its Prometheus metrics on
// (--metrics-addr): their cost is its figures over kopfgo's; kopfgo-tracing
// is kopfgo's contender with tracing on (OTEL_EXPORTER_OTLP_ENDPOINT, every
// span sampled and exported): its cost is its figures over kopfgo's, whose
// tracing is off.
var contenderNames = []string{"floor", "kopfgo", "kopfgo-metrics", "kopfgo-tracing", "peer"}

// extraContenders run only when named: kopfgo-noconditions is kopfgo's
// contender with the framework's status.conditions off (--no-conditions),
// so that a run can tell what the conditions cost (their bytes in every
// object kept, their part of the status patch) from the engine's own cost.
var extraContenders = []string{"kopfgo-noconditions"}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

func run(ctx context.Context, o options) error {
	work := o.workDir
	if work == "" {
		dir, err := os.MkdirTemp("", "kopfgo-bench-")
		if err != nil {
			return err
		}
		work = dir
		if o.keep {
			defer logf("contenders' binaries and logs are in %s", work)
		} else {
			defer os.RemoveAll(work)
		}
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	if o.profileDir != "" {
		if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
			return err
		}
	}
	bins, err := build(ctx, o.contenders, o.prebuilt, filepath.Join(work, "bin"))
	if err != nil {
		return err
	}

	logf("starting a local etcd and kube-apiserver (built from Go modules on first use)")
	// etcd's default quota (2 GB) fills in a scale-out run of a few hundred
	// thousand objects: every object is written three times, a set is
	// deleted only when the next one starts (the last one never), and the
	// space of old revisions is reused, not returned. 8 GB is the largest
	// quota etcd recommends.
	c, err := cluster.Start(ctx, cluster.Options{Logf: logf, ExtraEtcdArgs: []string{"--quota-backend-bytes", strconv.Itoa(8 << 30)}})
	if err != nil {
		return err
	}
	defer c.Stop()
	if err := c.ApplyFile(ctx, filepath.Join(repoRoot, "examples", "crd.yaml")); err != nil {
		return err
	}
	b, err := newBench(ctx, o, c, bins, work)
	if err != nil {
		return err
	}
	if err := b.warmup(ctx); err != nil {
		return err
	}
	rep := report{Machine: describeMachine(runtime.NumCPU(), runtime.Version()), Params: o.params()}
	for round := 1; round <= o.rounds; round++ {
		b.round = round
		if o.rounds > 1 {
			logf("round %d of %d", round, o.rounds)
		}
		for _, sc := range []struct {
			name string
			run  func(context.Context) ([]result, error)
		}{
			{"burst", b.burstAndUpdates},
			{"latency", b.latency},
			{"restart", b.restart},
			{"scale", b.scale},
			{"scaleout", b.scaleOut},
			{"backlog", b.backlog},
			{"backlog-shed", b.backlogShed},
		} {
			if sc.name == "burst" && !o.wants("burst") && !o.wants("updates") || sc.name != "burst" && !o.wants(sc.name) {
				continue
			}
			rs, err := sc.run(ctx)
			for i := range rs {
				rs[i].Round = round
			}
			rep.Results = append(rep.Results, rs...)
			if err != nil {
				return err
			}
		}
	}
	rep.ratios()
	rep.summarize()
	rep.print(os.Stdout)
	if o.out != "" {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.out, append(data, '\n'), 0o644); err != nil {
			return err
		}
		logf("results written to %s", o.out)
	}
	return nil
}

// backlogTimeout bounds the wait for a backlog of n objects.
func (o options) backlogTimeout(n int) time.Duration {
	if o.backlogWait > 0 {
		return o.backlogWait
	}
	return scaleTimeout(n)
}

func (o options) wants(s string) bool { return slices.Contains(o.scenarios, s) }

// checkout writes the tree of a git revision of this repository to dir,
// for a kopfgo@REV contender: the same scenarios, in the same run, with an
// earlier kopfgo (the "before" of a before-and-after).
func checkout(ctx context.Context, rev, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	archive := exec.CommandContext(ctx, "git", "archive", "--format=tar", rev)
	archive.Dir = repoRoot
	tarball, err := archive.Output()
	if err != nil {
		return "", fmt.Errorf("reading revision %s of the repository (git archive): %w", rev, err)
	}
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", dir)
	untar.Stdin = bytes.NewReader(tarball)
	if msg, err := untar.CombinedOutput(); err != nil {
		return "", fmt.Errorf("unpacking revision %s: %v\n%s", rev, err, msg)
	}
	return dir, nil
}

// build compiles the contenders, except those prebuilt. The peer is a
// module of its own.
func build(ctx context.Context, names []string, prebuilt map[string]string, dir string) (map[string]string, error) {
	bins := map[string]string{}
	for _, name := range names {
		if path, ok := prebuilt[name]; ok {
			logf("the %s contender is %s", name, path)
			bins[name] = path
			continue
		}
		out := filepath.Join(dir, name)
		logf("building the %s contender", name)
		var cmd *exec.Cmd
		if rev, ok := strings.CutPrefix(name, "kopfgo@"); ok {
			src, err := checkout(ctx, rev, filepath.Join(dir, "src@"+rev))
			if err != nil {
				return nil, err
			}
			cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./e2e/bench/kopfgo")
			cmd.Dir = src
			if msg, err := cmd.CombinedOutput(); err != nil {
				return nil, fmt.Errorf("building the %s contender: %v\n%s", name, err, msg)
			}
			bins[name] = out
			continue
		}
		switch name {
		case "peer":
			cmd = exec.CommandContext(ctx, "go", "build", "-o", out, ".")
			cmd.Dir = filepath.Join(repoRoot, "e2e", "bench", "peer")
		case "kopfgo-metrics", "kopfgo-tracing", "kopfgo-noconditions":
			// The same operator; startContender turns the metrics or tracing
			// on, or the conditions off.
			cmd = exec.CommandContext(ctx, "go", "build", "-o", out, "./e2e/bench/kopfgo")
			cmd.Dir = repoRoot
		default:
			cmd = exec.CommandContext(ctx, "go", "build", "-o", out, "./e2e/bench/"+name)
			cmd.Dir = repoRoot
		}
		if msg, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building the %s contender: %v\n%s", name, err, msg)
		}
		bins[name] = out
	}
	return bins, nil
}
