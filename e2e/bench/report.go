package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// result is one contender's figures in one scenario. Figures that do not
// apply to the scenario are zero and left out of the JSON.
type result struct {
	Scenario  string `json:"scenario"`
	Contender string `json:"contender"`
	// Round is the round (-rounds) the figures come from; 0 in a median
	// over the rounds.
	Round   int `json:"round,omitempty"`
	Objects int `json:"objects"`
	// Seconds: burst and updates, from the first request of the driver to
	// the last object seen handled; restart, from the contender's start to
	// its going idle.
	Seconds   float64 `json:"seconds,omitempty"`
	PerSecond float64 `json:"perSecond,omitempty"`
	// DriverSeconds is how long the driver took to send its requests.
	DriverSeconds  float64 `json:"driverSeconds,omitempty"`
	ListingSeconds float64 `json:"listingSeconds,omitempty"`
	P50Ms          float64 `json:"p50Ms,omitempty"`
	P99Ms          float64 `json:"p99Ms,omitempty"`
	MaxMs          float64 `json:"maxMs,omitempty"`
	// CPUSeconds is user+sys time of the contender over the scenario, up to
	// its going idle after the last object.
	CPUSeconds      float64 `json:"cpuSeconds"`
	CPUPerObjectMs  float64 `json:"cpuPerObjectMs"`
	PeakRSSMB       float64 `json:"peakRssMB"`
	Writes          int64   `json:"writes"`
	WritesPerObject float64 `json:"writesPerObject"`
	Calls           int64   `json:"calls"`
	// Scale-out: each replica's figures, and the time from a replica's
	// SIGKILL until objects created then are all handled (its shards
	// taken over and listed by the others).
	Replicas        []replicaFigures `json:"replicas,omitempty"`
	HandoverSeconds float64          `json:"handoverSeconds,omitempty"`
	// HandoverLeasesSeconds is the part of it until the others held all
	// the shards (the Leases expired and taken; the rest is the
	// rebalance's pause, the listing and the handling).
	HandoverLeasesSeconds float64 `json:"handoverLeasesSeconds,omitempty"`
	// Webhook says whose webhook labelled the new objects with their
	// shard at creation ("replica-2's"), or why none did; WebhookCalls
	// and WebhookFailOpen are the API server's counts of its calls over
	// the burst, and of those that failed and were let through unlabelled.
	Webhook         string `json:"webhook,omitempty"`
	WebhookCalls    int64  `json:"webhookCalls,omitempty"`
	WebhookFailOpen int64  `json:"webhookFailOpen,omitempty"`
	// Scale: the RSS of the contender watching nothing yet, then with all
	// objects present and idle, and the steady RSS above the empty one per
	// object; the churn phase's objects, CPU per object, handler calls,
	// duration and RSS samples (the first before it, the last after it).
	EmptyRSSMB          float64   `json:"emptyRssMB,omitempty"`
	SteadyRSSMB         float64   `json:"steadyRssMB,omitempty"`
	KBPerObject         float64   `json:"kbPerObject,omitempty"`
	ChurnObjects        int       `json:"churnObjects,omitempty"`
	ChurnCPUPerObjectMs float64   `json:"churnCpuPerObjectMs,omitempty"`
	ChurnCalls          int64     `json:"churnCalls,omitempty"`
	ChurnSeconds        float64   `json:"churnSeconds,omitempty"`
	ChurnRSSMB          []float64 `json:"churnRssMB,omitempty"`
	// Backlog: the patches of the objects that the API server answered
	// with 2xx, and the requests on the objects it answered otherwise, by
	// code (its apiserver_request_total, before the contender's start and
	// after it went idle). Writes are the write requests the contender
	// sent (its probe).
	Patches        int64            `json:"patches,omitempty"`
	FailedRequests map[string]int64 `json:"failedRequests,omitempty"`
	ServerErrors   int64            `json:"serverErrors,omitempty"`
	// Error is why the contender did not finish the scenario (backlog
	// scenarios only; the others end the run).
	Error string `json:"error,omitempty"`
	// LoadAverage is the machine's (1, 5, 15 minutes) when the contender
	// was done: the API server and the driver share its cores.
	LoadAverage string `json:"loadAverage,omitempty"`
	// Ratios to the floor's figures in the same scenario and run.
	Ratios map[string]float64 `json:"ratiosToFloor,omitempty"`
}

type report struct {
	Machine machine        `json:"machine"`
	Params  map[string]any `json:"params"`
	Results []result       `json:"results"`
	// Medians are each figure's median over the rounds, ratios included
	// (each the median of the rounds' ratios); only with several rounds.
	Medians []result `json:"medians,omitempty"`
	Notes   []string `json:"notes"`
}

func (o options) params() map[string]any {
	return map[string]any{
		"n": o.n, "restartN": o.restartN, "rate": o.rate, "duration": o.duration.String(),
		"scenarios": o.scenarios, "contenders": o.contenders, "creators": o.creators,
		"profiling": o.profileDir != "", "idleWindow": idleWindow.String(), "rounds": o.rounds,
		"scaleN": o.scaleN, "churnRate": o.churnRate, "churn": o.churn.String(), "prebuilt": o.prebuilt,
		"backlogN": o.backlogN, "shedInflight": o.shedInflight, "shedMutating": o.shedMutating, "shards": o.shards,
		"replicas": o.replicas, "scaleoutRate": o.scaleOutRate,
	}
}

// ratios gives each result its ratios to the floor of the same scenario and
// round, and notes what is wrong.
func (r *report) ratios() {
	type at struct {
		scenario string
		round    int
	}
	floors := map[at]result{}
	for _, x := range r.Results {
		if x.Contender == "floor" {
			floors[at{x.Scenario, x.Round}] = x
		}
	}
	for i := range r.Results {
		x := &r.Results[i]
		f, ok := floors[at{x.Scenario, x.Round}]
		if !ok || x.Contender == "floor" {
			continue
		}
		x.Ratios = map[string]float64{}
		put := func(k string, v, base float64) {
			if base > 0 && v > 0 {
				x.Ratios[k] = v / base
			}
		}
		put("perSecond", x.PerSecond, f.PerSecond)
		put("seconds", x.Seconds, f.Seconds)
		put("cpuSeconds", x.CPUSeconds, f.CPUSeconds)
		put("cpuPerObject", x.CPUPerObjectMs, f.CPUPerObjectMs)
		put("peakRss", x.PeakRSSMB, f.PeakRSSMB)
		put("p50", x.P50Ms, f.P50Ms)
		put("p99", x.P99Ms, f.P99Ms)
		put("listing", x.ListingSeconds, f.ListingSeconds)
		put("idleToFloorListing", x.Seconds, f.ListingSeconds)
		put("steadyRss", x.SteadyRSSMB, f.SteadyRSSMB)
		put("churnCpuPerObject", x.ChurnCPUPerObjectMs, f.ChurnCPUPerObjectMs)
	}
	for _, x := range r.Results {
		// Every object needs exactly one call of the scenario's handler
		// (none at restart): more means a contender handled something twice.
		want := int64(x.Objects)
		restart := x.Scenario == "restart" || x.Scenario == "scale-restart"
		if restart {
			want = 0
		}
		if x.Error != "" {
			r.Notes = append(r.Notes, fmt.Sprintf("FAILED: %s in %s: %s", x.Contender, x.Scenario, x.Error))
			continue
		}
		if x.Scenario == "scaleout" {
			r.Notes = append(r.Notes, scaleOutNotes(x)...)
		}
		if x.Calls != want || restart && x.Writes != 0 || x.ChurnCalls != int64(x.ChurnObjects) {
			r.Notes = append(r.Notes, fmt.Sprintf("WRONG: %s in %s made %d handler calls and %d writes for %d objects",
				x.Contender, x.Scenario, x.Calls, x.Writes, x.Objects))
		}
		// A backlog's objects each need two patches (the diff-base, the
		// result), and an API server, however loaded, no 5xx.
		if backlog := x.Scenario == "backlog" || x.Scenario == "backlog-shed"; backlog && (x.Patches != 2*want || x.ServerErrors > 0) {
			r.Notes = append(r.Notes, fmt.Sprintf("WRONG: %s in %s made %d patches for %d objects, failed requests by code: %v",
				x.Contender, x.Scenario, x.Patches, x.Objects, x.FailedRequests))
		}
	}
	r.Notes = append(r.Notes,
		"ratios are to the floor's figure in the same scenario of the same run",
		"the API server and the driver share the machine with the contender; figures are noisy, ratios less so")
	if r.Params["profiling"] == true {
		r.Notes = append(r.Notes, "contenders ran with CPU profiling on, which costs some CPU itself")
	}
}

func (r *report) print(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "\nkopfgo benchmark, %s: %s, %d cores, %d GB, Linux %s, %s; load average %s at the start\n", m.Started, m.CPU, m.Cores, m.MemGB, m.Kernel, m.Go, m.LoadAverage)
	results := r.Results
	if len(r.Medians) > 0 {
		fmt.Fprintf(w, "\nmedians over %d rounds\n", r.Params["rounds"])
		results = r.Medians
	}
	for _, sc := range allScenarios {
		var rows []result
		for _, x := range results {
			if x.Scenario == sc {
				rows = append(rows, x)
			}
		}
		if len(rows) == 0 {
			continue
		}
		// The title's figures are of a contender that ran: one that
		// failed before its start has none.
		first := rows[0]
		if i := slices.IndexFunc(rows, func(x result) bool { return x.Error == "" }); i >= 0 {
			first = rows[i]
		}
		fmt.Fprintf(w, "\n%s\n", title(sc, first, r.Params))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		switch sc {
		case "burst", "updates":
			fmt.Fprintln(tw, "contender\tseconds\tobjects/s\t×floor\tCPU s\tCPU ms/object\t×floor\tpeak RSS MB\t×floor\twrites/object\tcalls\t")
			for _, x := range rows {
				fmt.Fprintf(tw, "%s\t%.2f\t%.0f\t%s\t%.2f\t%.2f\t%s\t%.0f\t%s\t%.2f\t%d\t\n", x.Contender, x.Seconds, x.PerSecond, ratio(x, "perSecond"),
					x.CPUSeconds, x.CPUPerObjectMs, ratio(x, "cpuPerObject"), x.PeakRSSMB, ratio(x, "peakRss"), x.WritesPerObject, x.Calls)
			}
		case "latency":
			fmt.Fprintln(tw, "contender\tp50 ms\t×floor\tp99 ms\t×floor\tmax ms\tCPU ms/object\t×floor\tpeak RSS MB\t×floor\twrites/object\tcalls\t")
			for _, x := range rows {
				fmt.Fprintf(tw, "%s\t%.1f\t%s\t%.1f\t%s\t%.1f\t%.2f\t%s\t%.0f\t%s\t%.2f\t%d\t\n", x.Contender, x.P50Ms, ratio(x, "p50"), x.P99Ms, ratio(x, "p99"), x.MaxMs,
					x.CPUPerObjectMs, ratio(x, "cpuPerObject"), x.PeakRSSMB, ratio(x, "peakRss"), x.WritesPerObject, x.Calls)
			}
		case "scale":
			fmt.Fprintln(tw, "contender\tobjects/s\t×floor\tCPU ms/object\t×floor\tpeak RSS MB\t×floor\tempty MB\tsteady MB\t×floor\tKB/object\tchurn CPU ms/object\t×floor\tchurn RSS MB before → max → after\t")
			for _, x := range rows {
				fmt.Fprintf(tw, "%s\t%.0f\t%s\t%.2f\t%s\t%.0f\t%s\t%.0f\t%.0f\t%s\t%.1f\t%.2f\t%s\t%s\t\n", x.Contender, x.PerSecond, ratio(x, "perSecond"),
					x.CPUPerObjectMs, ratio(x, "cpuPerObject"), x.PeakRSSMB, ratio(x, "peakRss"), x.EmptyRSSMB, x.SteadyRSSMB, ratio(x, "steadyRss"),
					x.KBPerObject, x.ChurnCPUPerObjectMs, ratio(x, "churnCpuPerObject"), churnRSS(x.ChurnRSSMB))
			}
		case "scaleout":
			fmt.Fprintln(tw, "replicas\tseconds\tobjects/s\tCPU s (sum)\t×1\tCPU ms/object\tpeak RSS MB (largest)\twrites/object\tcalls\twatch events per replica\tCPU s per replica\t×1\tidle CPU ms/s per replica\tpeak RSS MB per replica\t×1\tRssAnon MB per replica\t×1\tlabel patches per replica\tlabel webhook\twebhook calls (failed open)\twebhook KB per replica\tlabel reviews per replica\thandover after SIGKILL s (shards taken)\t")
			for _, x := range rows {
				if x.Error != "" {
					continue // in the notes
				}
				handover := "-"
				if x.HandoverSeconds > 0 {
					handover = fmt.Sprintf("%.1f (%.1f)", x.HandoverSeconds, x.HandoverLeasesSeconds)
				}
				one := oneReplica(rows, x)
				webhook, _, _ := strings.Cut(x.Webhook, ":") // "none": the notes say why
				if webhook == "" {
					webhook = "-"
				}
				fmt.Fprintf(tw, "%s\t%.2f\t%.0f\t%.2f\t%s\t%.2f\t%.0f\t%.2f\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d (%d)\t%s\t%s\t%s\t\n", x.Contender, x.Seconds, x.PerSecond,
					x.CPUSeconds, times(x.CPUSeconds, one.CPUSeconds), x.CPUPerObjectMs, x.PeakRSSMB, x.WritesPerObject, x.Calls,
					perReplica(x.Replicas, "%.0f", func(f replicaFigures) float64 { return f.WatchEvents }),
					perReplica(x.Replicas, "%.2f", func(f replicaFigures) float64 { return f.CPUSeconds }),
					perReplica(x.Replicas, "%.2f", func(f replicaFigures) float64 { return f.CPUSeconds / one.CPUSeconds }),
					perReplica(x.Replicas, "%.1f", func(f replicaFigures) float64 { return f.IdleCPUMsPerS }),
					perReplica(x.Replicas, "%.0f", func(f replicaFigures) float64 { return f.PeakRSSMB }),
					perReplica(x.Replicas, "%.2f", func(f replicaFigures) float64 { return f.PeakRSSMB / one.PeakRSSMB }),
					perReplica(x.Replicas, "%.0f", func(f replicaFigures) float64 { return f.AnonRSSMB }),
					perReplica(x.Replicas, "%.2f", func(f replicaFigures) float64 { return f.AnonRSSMB / oneAnon(one) }),
					shardLabels(x.Replicas), webhook, x.WebhookCalls, x.WebhookFailOpen, webhookShares(x.Replicas), labelReviewShares(x.Replicas), handover)
			}
		case "backlog", "backlog-shed":
			fmt.Fprintln(tw, "contender\tdrain s\t×floor\tCPU s\t×floor\tpeak RSS MB\t×floor\tcalls\twrites sent\tpatches made\tfailed requests by code\tload average after\t")
			for _, x := range rows {
				drain, ratioDrain := fmt.Sprintf("%.1f", x.Seconds), ratio(x, "seconds")
				if x.Error != "" { // given up on: the figures are lower bounds
					drain, ratioDrain = ">"+drain, ">"+ratioDrain
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f\t%s\t%.0f\t%s\t%d\t%d\t%d\t%s\t%s\t\n", x.Contender, drain, ratioDrain,
					x.CPUSeconds, ratio(x, "cpuSeconds"), x.PeakRSSMB, ratio(x, "peakRss"), x.Calls, x.Writes, x.Patches, byCode(x.FailedRequests), x.LoadAverage)
			}
		case "restart", "scale-restart":
			fmt.Fprintln(tw, "contender\tlisted s\tidle s\t×floor listing\tCPU s\tCPU ms/object\t×floor\tpeak RSS MB\t×floor\twrites\tcalls\t")
			for _, x := range rows {
				fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%s\t%.2f\t%.3f\t%s\t%.0f\t%s\t%d\t%d\t\n", x.Contender, x.ListingSeconds, x.Seconds, ratio(x, "idleToFloorListing"),
					x.CPUSeconds, x.CPUPerObjectMs, ratio(x, "cpuPerObject"), x.PeakRSSMB, ratio(x, "peakRss"), x.Writes, x.Calls)
			}
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "Note: %s.\n", n)
	}
}

// byCode is "none" or the counts by code, in the codes' order: "429: 12, 504: 3".
func byCode(counts map[string]int64) string {
	if len(counts) == 0 {
		return "none"
	}
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s: %d", code, counts[code]))
	}
	return strings.Join(parts, ", ")
}

// scaleOutNotes say what went other than meant with the label webhook: a
// contender without it (its coordinator labels every object), calls that
// failed open, label patches made although the webhook was there.
func scaleOutNotes(x result) []string {
	if none, ok := strings.CutPrefix(x.Webhook, "none: "); ok {
		if !strings.HasSuffix(x.Contender, "×1") {
			return nil // said once, with one replica
		}
		base, _, _ := strings.Cut(x.Contender, "×")
		return []string{fmt.Sprintf("scaleout, %s: no label webhook (%s): its coordinator labels every object", base, none)}
	}
	var labels int64
	for _, f := range x.Replicas {
		labels += f.ShardLabels
	}
	if x.Webhook != "" && (x.WebhookFailOpen > 0 || labels > 0 || x.WebhookCalls < int64(x.Objects)) {
		return []string{fmt.Sprintf("WRONG: scaleout, %s: the label webhook was called %d times for %d objects (%d failed open), and the replicas made %d label patches",
			x.Contender, x.WebhookCalls, x.Objects, x.WebhookFailOpen, labels)}
	}
	return nil
}

// webhookShares are the KB each replica's webhook server was sent over
// the burst behind the service, "a / b / c", or "-" without the service.
func webhookShares(rs []replicaFigures) string {
	for _, f := range rs {
		if f.WebhookKB > 0 {
			return perReplica(rs, "%.0f", func(f replicaFigures) float64 { return f.WebhookKB })
		}
	}
	return "-"
}

// labelReviewShares are the label reviews each replica answered over the
// burst, "a / b / c", or "-" where no replica counted any.
func labelReviewShares(rs []replicaFigures) string {
	for _, f := range rs {
		if f.LabelReviews > 0 {
			return perReplica(rs, "%.0f", func(f replicaFigures) float64 { return float64(f.LabelReviews) })
		}
	}
	return "-"
}

// oneReplica is the scale-out row of x's contender with one replica (the
// base of the ×1 ratios), or a zero result.
func oneReplica(rows []result, x result) result {
	base, _, _ := strings.Cut(x.Contender, "×")
	for _, r := range rows {
		if r.Contender == base+"×1" && r.Round == x.Round {
			return r
		}
	}
	return result{}
}

// times is v as a multiple of base, or "-" without a base.
func times(v, base float64) string {
	if base <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v/base)
}

// oneAnon is a single replica's RssAnon after the burst (0 where not
// measured: the ratios are then +Inf or NaN).
func oneAnon(one result) float64 {
	if len(one.Replicas) == 0 {
		return 0
	}
	return one.Replicas[0].AnonRSSMB
}

// perReplica is one figure of each replica, "a / b / c".
func perReplica(rs []replicaFigures, format string, of func(replicaFigures) float64) string {
	if len(rs) == 0 {
		return "-"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf(format, of(r))
	}
	return strings.Join(parts, " / ")
}

// churnRSS is the churn phase's RSS: before, the highest sample, after.
func churnRSS(samples []float64) string {
	if len(samples) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f → %.0f → %.0f", samples[0], slices.Max(samples), samples[len(samples)-1])
}

func ratio(x result, k string) string {
	v, ok := x.Ratios[k]
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

// replicaCounts says the scale-out's replica counts as a sentence does:
// "1, 2 and 4 replicas".
func replicaCounts(v any) string {
	ns, _ := v.([]int)
	var out []string
	for _, n := range ns {
		out = append(out, strconv.Itoa(n))
	}
	switch {
	case len(out) == 0:
		return "several replicas"
	case len(out) == 1 && ns[0] == 1:
		return "1 replica"
	case len(out) == 1:
		return out[0] + " replicas"
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1] + " replicas"
}

// arrival says how the objects of a scenario paced by rate (objects per
// second, 0 for none) were created.
func arrival(rate any) string {
	if r, ok := rate.(float64); ok && r > 0 {
		return fmt.Sprintf("at %g/s", r)
	}
	return "at once"
}

func title(sc string, x result, p map[string]any) string {
	switch sc {
	case "burst":
		return fmt.Sprintf("burst: %d objects created at once (%d concurrent requests); until all are handled", x.Objects, p["creators"])
	case "updates":
		return fmt.Sprintf("updates: the spec of all %d objects changed; until every update is handled", x.Objects)
	case "latency":
		return fmt.Sprintf("latency: %g objects/s for %s (%d objects); from creation to handled", p["rate"], p["duration"], x.Objects)
	case "scale":
		return fmt.Sprintf("scale: %d objects created at once, then a churn of %v objects/s for %v; memory per object above the empty contender's RSS", x.Objects, p["churnRate"], p["churn"])
	case "scale-restart":
		return fmt.Sprintf("scale-restart: start on the %d objects handled in the scale scenario; until idle (%s without CPU)", x.Objects, idleWindow)
	case "restart":
		return fmt.Sprintf("restart: start on %d already handled objects; until idle (%s without CPU)", x.Objects, idleWindow)
	case "backlog":
		return fmt.Sprintf("backlog: %d unhandled objects present before the contender starts; from its start until all are handled", x.Objects)
	case "backlog-shed":
		return fmt.Sprintf("backlog-shed: the backlog against an API server with --max-requests-inflight=%v --max-mutating-requests-inflight=%v, the contenders as a service account in an APF priority level of fixed seats (%d shares, no lending or borrowing)", p["shedInflight"], p["shedMutating"], contenderShares)
	case "scaleout":
		return fmt.Sprintf("scaleout: kopfgo sharded over %s (%v shards; ×1: to the same contender with one replica), %d objects created %s; until all are handled; then a replica SIGKILLed (the last one, or the one before if the last alone serves the label webhook) and %d objects created, until they are handled. The label webhook labels new objects with their shard: all replicas behind one address as behind a Service (each connection of the API server's to the next replica; the KB each was sent over the burst is its share), or the replica whose URL the configuration holds; label patches are the coordinator's, for objects that came without the label. floor×N: N bare client-go floors, each watching its shards' objects by the same label selectors, the objects created labelled; no Leases, no webhook, no handover", replicaCounts(p["replicas"]), p["shards"], x.Objects, arrival(p["scaleoutRate"]), handoverObjects)
	}
	return sc
}
