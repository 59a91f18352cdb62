// Command chaos is make chaos: the chaos run of package e2e/chaos with N
// objects (-n, default 2000), the first -backlog of them present before
// the operator starts; it prints the table, writes chaos.json and
// exits 1 if an invariant broke.
//
//	go run ./e2e/cmd/chaos -n 3000 -backlog 2000 -every 3s -out chaos.json
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kopfgo/kopfgo/e2e/chaos"
)

func main() {
	var cfg chaos.Config
	out := flag.String("out", "chaos.json", "where to write the JSON report")
	flag.IntVar(&cfg.N, "n", 2000, "objects")
	flag.IntVar(&cfg.Backlog, "backlog", 0, "of the first round's objects, this many are created before the operator starts, which is SIGKILLed once a tenth of them are handled (the backlog round; at most -n)")
	flag.DurationVar(&cfg.FaultEvery, "every", 3*time.Second, "pause between faults")
	flag.IntVar(&cfg.Workers, "workers", 20, "concurrent creations")
	flag.Float64Var(&cfg.Rate, "rate", 0, "objects created per second (default: spread over one cycle of the fault schedule)")
	flag.StringVar(&cfg.Dir, "dir", "", "keep the journal, logs and cluster here")
	faults := flag.String("faults", "all", "the kinds of fault injected: all, none, or a comma-separated list of "+strings.Join(chaos.FaultKinds(), ", "))
	flag.IntVar(&cfg.Rounds, "rounds", 3, "run the N objects this many times in a row (faults in the first round only); the live heap is read after each, and checked from the third on against the second")
	flag.BoolVar(&cfg.HeapProfiles, "heap-profiles", false, "the operator writes a heap profile with each reading of its live heap, into DIR/profiles")
	flag.IntVar(&cfg.ProfileRate, "profile-rate", 512, "the operator's runtime.MemProfileRate with -heap-profiles, in bytes")
	flag.Parse()
	switch *faults {
	case "all":
	case "none":
		cfg.Faults = []string{}
	default:
		cfg.Faults = strings.Split(*faults, ",")
	}
	cfg.Logf = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := chaos.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	rep.Print(os.Stdout)
	if err := rep.WriteJSON(*out); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	if len(rep.Failures) > 0 {
		os.Exit(1)
	}
}
