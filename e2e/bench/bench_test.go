package main

import (
	"os"
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
	_ = buf[len(buf)-1]
}

func TestOptionsValidate(t *testing.T) {
	ok := options{n: 1, restartN: 1, rate: 1, duration: time.Second, creators: 1, scenarios: []string{"burst"}, contenders: []string{"floor"}}
	if err := ok.validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*options){
		"unknown scenario":  func(o *options) { o.scenarios = []string{"soak"} },
		"unknown contender": func(o *options) { o.contenders = []string{"kopf"} },
		"no scenario":       func(o *options) { o.scenarios = nil },
		"zero n":            func(o *options) { o.n = 0 },
	} {
		o := ok
		mutate(&o)
		if o.validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
