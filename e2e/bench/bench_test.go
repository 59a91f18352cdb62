package main

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var out []time.Duration
		for _, n := range ns {
			out = append(out, time.Duration(n)*time.Millisecond)
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"median of odd", ms(1, 2, 3), 0.5, 2 * time.Millisecond},
		{"median of even: the lower", ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{"p99 of 100", ms(hundred...), 0.99, 99 * time.Millisecond},
		{"p50 of 100", ms(hundred...), 0.50, 50 * time.Millisecond},
		{"p100", ms(1, 5, 9), 1, 9 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.sorted, tc.q); got != tc.want {
				t.Errorf("percentile(%v, %g) = %v, want %v", tc.sorted, tc.q, got, tc.want)
			}
		})
	}
}

// The /proc readers on this process: CPU time grows with work, and the peak
// RSS is at least what a large allocation touched.
var spin int

func TestProcReaders(t *testing.T) {
	before, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the reader sees the work; only a reader that never does
	// runs into the (generous) deadline.
	deadline := time.Now().Add(30 * time.Second)
	for {
		after, err := cpuTime(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after-before >= 5*clockTick {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time grew by %v over 30s of spinning", after-before)
		}
		for i := 0; i < 1e6; i++ {
			spin += i
		}
	}
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = 1
	}
	rss, err := peakRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rss < 64<<20 {
		t.Errorf("peak RSS %d bytes after touching 64 MB", rss)
	}
	anon, err := anonRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if anon < 64<<20 {
		t.Errorf("anonymous RSS %d bytes with 64 MB of heap touched", anon)
	}
	_ = buf[len(buf)-1]
}

func TestOptionsValidate(t *testing.T) {
	ok := options{n: 1, restartN: 1, rate: 1, duration: time.Second, creators: 1, rounds: 1, scaleN: 1, backlogN: 1, shedInflight: 1, shedMutating: 1, shards: 12, replicas: []int{1, 2, 4},
		scenarios: []string{"burst", "backlog", "backlog-shed"}, contenders: []string{"floor", "kopfgo@a83e75b"}}
	if err := ok.validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*options){
		"unknown scenario":    func(o *options) { o.scenarios = []string{"soak"} },
		"unknown contender":   func(o *options) { o.contenders = []string{"kopf"} },
		"revision missing":    func(o *options) { o.contenders = []string{"kopfgo@"} },
		"no scenario":         func(o *options) { o.scenarios = nil },
		"zero n":              func(o *options) { o.n = 0 },
		"zero rounds":         func(o *options) { o.rounds = 0 },
		"scale-restart alone": func(o *options) { o.scenarios = []string{"scale-restart"} },
		"negative churn":      func(o *options) { o.churn = -time.Second },
		"zero backlog":        func(o *options) { o.backlogN = 0 },
		"zero shed limit":     func(o *options) { o.shedMutating = 0 },
		"shards unshared":     func(o *options) { o.shards = 6 },
		"zero shards":         func(o *options) { o.shards = 0 },
		"replicas unshared":   func(o *options) { o.replicas = []int{1, 5} },
		"no replicas":         func(o *options) { o.replicas = nil },
		"zero replicas":       func(o *options) { o.replicas = []int{0} },
		"negative rate":       func(o *options) { o.scaleOutRate = -1 },
	} {
		o := ok
		mutate(&o)
		if o.validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The scale-out's title says how its objects arrived and over which
// replica counts.
func TestScaleOutTitle(t *testing.T) {
	x := result{Objects: 2500}
	for _, tc := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"replicas": []int{1, 2, 4}, "scaleoutRate": 0.0}, "over 1, 2 and 4 replicas (12 shards; ×1: to the same contender with one replica), 2500 objects created at once;"},
		{map[string]any{"replicas": []int{1}, "scaleoutRate": 25.0}, "over 1 replica (12 shards; ×1: to the same contender with one replica), 2500 objects created at 25/s;"},
		{map[string]any{}, "over several replicas"},
	} {
		tc.params["shards"] = 12
		if got := title("scaleout", x, tc.params); !strings.Contains(got, tc.want) {
			t.Errorf("title(%v) = %q, want it to say %q", tc.params, got, tc.want)
		}
	}
}

// The profiles of a scale-out last as long as its objects take to arrive,
// and longer.
func TestScaleOutProfileWindowCoversTheArrival(t *testing.T) {
	for _, tc := range []struct {
		n         int
		perSecond float64
	}{{10000, 0}, {10000, 100}, {2500, 25}, {100, 1}} {
		arrival := time.Duration(0)
		if tc.perSecond > 0 {
			arrival = time.Duration(float64(tc.n) / tc.perSecond * float64(time.Second))
		}
		if got := scaleOutProfileWindow(tc.n, tc.perSecond); got <= arrival || got < scaleOutProfileWindow(tc.n, 0) {
			t.Errorf("%d objects at %g/s: profiles of %v, which end before the arrival (%v) or the burst's window", tc.n, tc.perSecond, got, arrival)
		}
	}
}

// paced calls do once for each index, whether paced or not, and stops
// with its context.
func TestPaced(t *testing.T) {
	b := &bench{o: options{creators: 3}}
	for _, rate := range []float64{0, 1000, 1e12} {
		var mu sync.Mutex
		seen := map[int]int{}
		err := b.paced(t.Context(), 20, rate, func(_ context.Context, i int) error {
			mu.Lock()
			defer mu.Unlock()
			seen[i]++
			return nil
		})
		if err != nil {
			t.Fatalf("rate %g: %v", rate, err)
		}
		for i := range 20 {
			if seen[i] != 1 {
				t.Errorf("rate %g: object %d created %d times, want once", rate, i, seen[i])
			}
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := b.paced(ctx, 20, 0.001, func(context.Context, int) error {
		t.Error("called with its context done")
		return nil
	}); !errors.Is(err, context.Canceled) {
		t.Errorf("paced with its context done: %v, want context.Canceled", err)
	}
}

// With several rounds, each figure's median and the ratios' medians are
// reported, and the metrics' cost is kopfgo-metrics over kopfgo round by
// round.
func TestSummarizeRounds(t *testing.T) {
	res := func(round int, contender string, cpu float64) result {
		return result{Scenario: "burst", Contender: contender, Round: round, Objects: 10, Calls: 10, Writes: 20, CPUPerObjectMs: cpu}
	}
	r := report{Params: map[string]any{"rounds": 3}, Results: []result{
		res(1, "floor", 1.0), res(1, "kopfgo", 0.8), res(1, "kopfgo-metrics", 0.9), res(1, "kopfgo-tracing", 1.0),
		res(2, "floor", 2.0), res(2, "kopfgo", 1.8), res(2, "kopfgo-metrics", 1.8), res(2, "kopfgo-tracing", 2.7),
		res(3, "floor", 1.0), res(3, "kopfgo", 1.0), res(3, "kopfgo-metrics", 0.9), res(3, "kopfgo-tracing", 1.1),
	}}
	r.ratios()
	r.summarize()
	if len(r.Medians) != 4 {
		t.Fatalf("medians: got %d rows, want one per contender: %+v", len(r.Medians), r.Medians)
	}
	for _, m := range r.Medians {
		want := map[string]float64{"floor": 1.0, "kopfgo": 1.0, "kopfgo-metrics": 0.9, "kopfgo-tracing": 1.1}[m.Contender]
		if m.CPUPerObjectMs != want || m.Round != 0 {
			t.Errorf("%s: median CPU per object %v (round %d), want %v (round 0)", m.Contender, m.CPUPerObjectMs, m.Round, want)
		}
	}
	// kopfgo's ratios by round: 0.8, 0.9, 1.0; the median is 0.9, not the
	// ratio of the medians (1.0).
	for _, m := range r.Medians {
		if m.Contender == "kopfgo" && m.Ratios["cpuPerObject"] != 0.9 {
			t.Errorf("kopfgo's median ratio = %v, want 0.9", m.Ratios["cpuPerObject"])
		}
	}
	// Costs by round: +12.5%, 0%, -10%: the median is 0%.
	var cost string
	for _, n := range r.Notes {
		if strings.HasPrefix(n, "burst: the metrics' CPU per object") {
			cost = n
		}
	}
	if !strings.Contains(cost, "median +0.0% (rounds: +12.5%, +0.0%, -10.0%)") {
		t.Errorf("metrics' cost note = %q", cost)
	}
	// The tracing's: +25%, +50%, +10%: the median is +25%.
	cost = ""
	for _, n := range r.Notes {
		if strings.HasPrefix(n, "burst: the tracing's CPU per object, kopfgo-tracing over kopfgo") {
			cost = n
		}
	}
	if !strings.Contains(cost, "median +25.0% (rounds: +25.0%, +50.0%, +10.0%)") {
		t.Errorf("tracing's cost note = %q in %q", cost, r.Notes)
	}
}

// A scale-out row's ratio by round is to its own single replica of the
// round (the floor's rows included), never to a "floor" row, which the
// scenario has not.
func TestSummarizeScaleOutRounds(t *testing.T) {
	res := func(round int, contender string, cpu float64) result {
		return result{Scenario: "scaleout", Contender: contender, Round: round, Objects: 10, Calls: 10, Writes: 20, CPUSeconds: cpu}
	}
	r := report{Params: map[string]any{"rounds": 2}, Results: []result{
		res(1, "floor×1", 1.0), res(1, "floor×4", 1.4), res(1, "kopfgo×1", 2.0), res(1, "kopfgo×4", 3.0),
		res(2, "floor×1", 2.0), res(2, "floor×4", 3.0), res(2, "kopfgo×1", 1.0), res(2, "kopfgo×4", 1.75),
		res(3, "kopfgo×4", 2.0), // its single replica failed: no ratio
	}}
	r.ratios()
	r.summarize()
	want := []string{
		"scaleout, floor×4: CPU (all) × one replica's by round: 1.40, 1.50",
		"scaleout, kopfgo×4: CPU (all) × one replica's by round: 1.50, 1.75, -",
	}
	var got []string
	for _, n := range r.Notes {
		if strings.HasPrefix(n, "scaleout, ") {
			got = append(got, n)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("notes = %q, want %q", got, want)
	}
}

func TestOneRoundHasNoMedians(t *testing.T) {
	r := report{Params: map[string]any{"rounds": 1}, Results: []result{
		{Scenario: "burst", Contender: "floor", Round: 1, Objects: 1, Calls: 1, CPUPerObjectMs: 1},
	}}
	r.ratios()
	r.summarize()
	if r.Medians != nil {
		t.Errorf("one round: medians %+v, want none", r.Medians)
	}
}

// A backlog is right with one call and two patches per object and no 5xx:
// 429s alone are the API server shedding load, which the contender bore.
func TestBacklogNotes(t *testing.T) {
	res := func(contender string, calls, patches int64, failed map[string]int64, errs5xx int64) result {
		return result{Scenario: "backlog-shed", Contender: contender, Round: 1, Objects: 10, Seconds: 2, CPUSeconds: 1, PeakRSSMB: 50,
			Calls: calls, Patches: patches, FailedRequests: failed, ServerErrors: errs5xx}
	}
	r := report{Params: map[string]any{"rounds": 1, "shedInflight": 20, "shedMutating": 10}, Results: []result{
		res("floor", 10, 20, map[string]int64{"429": 3}, 0),
		res("kopfgo", 18, 28, map[string]int64{"504": 8, "429": 40}, 8),
		res("peer", 10, 20, nil, 0),
	}}
	r.ratios()
	var wrong []string
	for _, n := range r.Notes {
		if strings.HasPrefix(n, "WRONG") {
			wrong = append(wrong, n)
		}
	}
	if len(wrong) != 2 || !strings.Contains(wrong[0], "kopfgo in backlog-shed made 18 handler calls") ||
		!strings.Contains(wrong[1], "kopfgo in backlog-shed made 28 patches for 10 objects, failed requests by code: map[429:40 504:8]") {
		t.Errorf("notes: %q", wrong)
	}
	var out strings.Builder
	r.print(&out)
	for _, want := range []string{"backlog-shed: the backlog against an API server with --max-requests-inflight=20", "429: 40, 504: 8", "none"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table has no %q:\n%s", want, out.String())
		}
	}
	if got := r.Results[1].Ratios["seconds"]; got != 1 {
		t.Errorf("drain time ×floor = %v, want 1", got)
	}
}

// A contender's name becomes part of a namespace's: kopfgo@REV must make a
// valid one.
func TestNamesAreNamespaceNames(t *testing.T) {
	for _, tc := range []struct {
		round      int
		base, want string
	}{
		{1, "bench-burst-kopfgo@a83e75b", "bench-burst-kopfgo-a83e75b"},
		{2, "bench-burst-kopfgo@V1.2", "bench-burst-kopfgo-v1-2-2"},
		{1, "bench-restart", "bench-restart"},
	} {
		if got := (&bench{round: tc.round}).name(tc.base); got != tc.want {
			t.Errorf("name(%q) in round %d = %q, want %q", tc.base, tc.round, got, tc.want)
		}
	}
}

// The scale-out table gives each replica's CPU and RSS as multiples of the
// same contender's single replica, and the notes say which contender had
// no label webhook and where the webhook did not do all the labelling.
func TestScaleOutReport(t *testing.T) {
	res := func(contender, webhook string, calls, failOpen int64, fs ...replicaFigures) result {
		x := result{Scenario: "scaleout", Contender: contender, Round: 1, Objects: 100, Calls: 100, Replicas: fs,
			Webhook: webhook, WebhookCalls: calls, WebhookFailOpen: failOpen}
		for _, f := range fs {
			x.CPUSeconds += f.CPUSeconds
			x.PeakRSSMB = max(x.PeakRSSMB, f.PeakRSSMB)
		}
		return x
	}
	r := report{Params: map[string]any{"rounds": 1, "replicas": []int{1, 2}}, Results: []result{
		{Scenario: "scaleout", Contender: "kopfgo@old", Error: "its bench operator has no sharding"},
		res("kopfgo×1", "replica-0's", 100, 0, replicaFigures{CPUSeconds: 2, PeakRSSMB: 50, AnonRSSMB: 20}),
		res("kopfgo×2", "all, behind one address", 100, 3, replicaFigures{CPUSeconds: 1.5, PeakRSSMB: 40, AnonRSSMB: 7, ShardLabels: 3, WebhookKB: 1200, LabelReviews: 51, IdleCPUMsPerS: 3.5},
			replicaFigures{CPUSeconds: 1, PeakRSSMB: 25, AnonRSSMB: 6, WebhookKB: 1180, LabelReviews: 49, IdleCPUMsPerS: 2}),
		res("kopfgo@abc×1", "none: the bench operator of kopfgo@abc has no KOPFGO_BENCH_WEBHOOK", 0, 0,
			replicaFigures{CPUSeconds: 4, PeakRSSMB: 60, LabelsUncounted: true}),
		res("kopfgo@abc×2", "none: the bench operator of kopfgo@abc has no KOPFGO_BENCH_WEBHOOK", 0, 0,
			replicaFigures{CPUSeconds: 3, PeakRSSMB: 30, LabelsUncounted: true}, replicaFigures{CPUSeconds: 1, PeakRSSMB: 30, LabelsUncounted: true}),
	}}
	r.Results[2].HandoverSeconds, r.Results[2].HandoverLeasesSeconds = 17.04, 15.46
	r.ratios()
	notes := strings.Join(r.Notes, "\n")
	for _, want := range []string{
		"WRONG: scaleout, kopfgo×2: the label webhook was called 100 times for 100 objects (3 failed open), and the replicas made 3 label patches",
		"scaleout, kopfgo@abc: no label webhook (the bench operator of kopfgo@abc has no KOPFGO_BENCH_WEBHOOK): its coordinator labels every object",
		"FAILED: kopfgo@old in scaleout: its bench operator has no sharding",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("no note %q in\n%s", want, notes)
		}
	}
	if n := strings.Count(notes, "no label webhook"); n != 1 {
		t.Errorf("%d notes of kopfgo@abc's missing webhook, want 1:\n%s", n, notes)
	}
	if strings.Contains(notes, "kopfgo×1") {
		t.Errorf("a note on kopfgo×1, whose webhook labelled all:\n%s", notes)
	}
	var out strings.Builder
	r.print(&out)
	table, _, _ := strings.Cut(out.String(), "Note:")
	for _, want := range []string{
		"1.25",                                                                                                                         // kopfgo×2's sum, to kopfgo×1's
		"0.75 / 0.50  ", "0.80 / 0.50  ", "7 / 6  ", "0.35 / 0.30  ", "3 / 0  ", "all, behind one address  ", "100 (3)", "17.0 (15.5)", // kopfgo×2's replicas, to kopfgo×1
		"1200 / 1180  ",            // the reviews' KB each of kopfgo×2's replicas was sent
		"51 / 49  ",                // the reviews each answered, by its metrics
		"3.5 / 2.0  ",              // their CPU when idle
		"0.75 / 0.25  ", "? / ?  ", // kopfgo@abc×2's CPU, to kopfgo@abc×1's; its labels not counted
		"100 objects created at once", // the title's, of a contender that ran, though the first failed
		"sharded over 1 and 2 replicas",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the table has no %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "kopfgo@old") {
		t.Errorf("the table has a row for kopfgo@old, which did not run:\n%s", table)
	}
}
