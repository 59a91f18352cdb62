package main

import (
	"fmt"
	"slices"
	"strings"
)

// summarize fills in the medians over the rounds, and notes the spread of
// the CPU per object's ratio and what kopfgo's metrics cost, when there are
// several rounds. One run of a contender varies by 10-20% on a shared
// machine; the median of rounds, in which the contenders take turns, is what
// a claim of a few percent can rest on.
func (r *report) summarize() {
	rounds := 0
	for _, x := range r.Results {
		rounds = max(rounds, x.Round)
	}
	if rounds < 2 {
		return
	}
	type key struct{ scenario, contender string }
	var order []key
	groups := map[key][]result{}
	for _, x := range r.Results {
		k := key{x.Scenario, x.Contender}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], x)
	}
	medians := map[key]result{}
	for _, k := range order {
		m := medianResult(groups[k])
		medians[k] = m
		r.Medians = append(r.Medians, m)
		switch {
		case k.scenario == "scaleout":
			// Its ratios are to the same contender's single replica.
			if !strings.HasSuffix(k.contender, "×1") {
				var by []string
				for _, x := range groups[k] {
					by = append(by, times(x.CPUSeconds, oneReplica(r.Results, x).CPUSeconds)) // "-" without one
				}
				r.Notes = append(r.Notes, fmt.Sprintf("%s, %s: CPU (all) × one replica's by round: %s", k.scenario, k.contender, strings.Join(by, ", ")))
			}
		case k.contender != "floor":
			r.Notes = append(r.Notes, fmt.Sprintf("%s, %s: CPU per object ×floor by round: %s", k.scenario, k.contender,
				joinRatios(groups[k], func(x result) float64 { return x.Ratios["cpuPerObject"] })))
		}
	}
	// The metrics' and tracing's costs: kopfgo-metrics and kopfgo-tracing
	// over kopfgo, round by round (each ran on the same API server, one
	// after the other).
	for _, on := range []struct{ contender, what string }{{"kopfgo-metrics", "metrics'"}, {"kopfgo-tracing", "tracing's"}} {
		for _, sc := range allScenarios {
			with, without := groups[key{sc, on.contender}], groups[key{sc, "kopfgo"}]
			if len(with) == 0 || len(with) != len(without) {
				continue
			}
			var costs []float64
			for i := range with {
				if without[i].CPUPerObjectMs > 0 {
					costs = append(costs, with[i].CPUPerObjectMs/without[i].CPUPerObjectMs-1)
				}
			}
			if len(costs) == 0 {
				continue
			}
			var each []string
			for _, c := range costs {
				each = append(each, fmt.Sprintf("%+.1f%%", 100*c))
			}
			r.Notes = append(r.Notes, fmt.Sprintf("%s: the %s CPU per object, %s over kopfgo: median %+.1f%% (rounds: %s)",
				sc, on.what, on.contender, 100*median(costs), strings.Join(each, ", ")))
		}
	}
}

// medianResult is the median of each figure of one contender's results in
// one scenario, its ratios the medians of theirs.
func medianResult(xs []result) result {
	m := xs[0]
	m.Round = 0
	fl := func(get func(result) float64) float64 {
		var vs []float64
		for _, x := range xs {
			vs = append(vs, get(x))
		}
		return median(vs)
	}
	in := func(get func(result) int64) int64 {
		return int64(fl(func(x result) float64 { return float64(get(x)) }))
	}
	m.Seconds = fl(func(x result) float64 { return x.Seconds })
	m.PerSecond = fl(func(x result) float64 { return x.PerSecond })
	m.DriverSeconds = fl(func(x result) float64 { return x.DriverSeconds })
	m.ListingSeconds = fl(func(x result) float64 { return x.ListingSeconds })
	m.P50Ms = fl(func(x result) float64 { return x.P50Ms })
	m.P99Ms = fl(func(x result) float64 { return x.P99Ms })
	m.MaxMs = fl(func(x result) float64 { return x.MaxMs })
	m.CPUSeconds = fl(func(x result) float64 { return x.CPUSeconds })
	m.CPUPerObjectMs = fl(func(x result) float64 { return x.CPUPerObjectMs })
	m.PeakRSSMB = fl(func(x result) float64 { return x.PeakRSSMB })
	m.WritesPerObject = fl(func(x result) float64 { return x.WritesPerObject })
	m.HandoverSeconds = fl(func(x result) float64 { return x.HandoverSeconds })
	m.HandoverLeasesSeconds = fl(func(x result) float64 { return x.HandoverLeasesSeconds })
	m.Writes = in(func(x result) int64 { return x.Writes })
	m.Calls = in(func(x result) int64 { return x.Calls })
	m.Patches = in(func(x result) int64 { return x.Patches })
	m.ServerErrors = in(func(x result) int64 { return x.ServerErrors })
	codes := map[string]bool{}
	for _, x := range xs {
		for code := range x.FailedRequests {
			codes[code] = true
		}
	}
	if len(codes) > 0 {
		m.FailedRequests = map[string]int64{}
		for code := range codes {
			m.FailedRequests[code] = in(func(x result) int64 { return x.FailedRequests[code] })
		}
	}
	if xs[0].Ratios != nil {
		m.Ratios = map[string]float64{}
		for k := range xs[0].Ratios {
			m.Ratios[k] = fl(func(x result) float64 { return x.Ratios[k] })
		}
	}
	return m
}

// median of vs; the mean of the middle two for an even count.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func joinRatios(xs []result, get func(result) float64) string {
	var out []string
	for _, x := range xs {
		out = append(out, fmt.Sprintf("%.2f", get(x)))
	}
	return strings.Join(out, ", ")
}
