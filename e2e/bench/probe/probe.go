// Package probe instruments the contenders of the benchmark (e2e/bench): it
// counts each contender's writes to the API and its handler calls, notes
// when its watch starts (the end of its initial listing), serves these
// figures and pprof on a loopback port for the bench driver, and writes CPU
// and heap profiles on request. All contenders use it, so that they are
// measured by the same means: a figure that one contender computed for
// itself could not be compared with the others'.
package probe

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	rpprof "runtime/pprof"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Stats are a contender's counters, as GET /stats serves them.
type Stats struct {
	// Writes are the API requests that change something (POST, PUT, PATCH,
	// DELETE), whatever their outcome.
	Writes int64 `json:"writes"`
	// Calls are invocations of the contender's handler: for kopfgo, of its
	// handler functions; for the others, of the code that does the writes.
	Calls int64 `json:"calls"`
	// WatchStarted is when the first watch request was sent (Unix ns): an
	// informer watches only after its initial listing is stored. Zero: not
	// yet.
	WatchStarted int64 `json:"watchStarted"`
	// ShardLabels are the patches of the watched resource that set a
	// sharding's label (ShardLabelPrefix): kopfgo's coordinator labelling
	// objects that were created without it. CountsShardLabels tells a
	// probe that counts them from an older one that did not (zero
	// either way).
	ShardLabels       int64 `json:"shardLabels"`
	CountsShardLabels bool  `json:"countsShardLabels"`
	// WatchEvents are the watch events of the watched resource the
	// contender counted (Event): the floor's, in the scale-out scenario;
	// kopfgo reports its own in its metrics.
	WatchEvents int64 `json:"watchEvents"`
}

// ShardLabelPrefix begins the label of kopfgo's sharding,
// shard.kopfgo.dev/<name> (its conventions.ShardLabelPrefix, which the
// probe, built into every contender, does not import).
const ShardLabelPrefix = "shard.kopfgo.dev/"

// Probe counts a contender's requests and calls. Its methods are safe for
// concurrent use.
type Probe struct {
	writes, calls, watchStarted, shardLabels, events atomic.Int64
}

// Call counts one handler call.
func (p *Probe) Call() { p.calls.Add(1) }

// Event counts one watch event received.
func (p *Probe) Event() { p.events.Add(1) }

// Stats returns the counters so far.
func (p *Probe) Stats() Stats {
	return Stats{Writes: p.writes.Load(), Calls: p.calls.Load(), WatchStarted: p.watchStarted.Load(),
		ShardLabels: p.shardLabels.Load(), CountsShardLabels: true, WatchEvents: p.events.Load()}
}

// Instrument makes every client built from cfg count its requests here.
func (p *Probe) Instrument(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &counting{next: rt, p: p} })
}

type counting struct {
	next http.RoundTripper
	p    *Probe
}

func (c *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet:
		// Only the watched resource counts: kopfgo also watches CRDs, from
		// before its listing of the objects has even begun.
		if w := req.URL.Query().Get("watch"); (w == "true" || w == "1") && strings.HasSuffix(req.URL.Path, "/"+GVR.Resource) {
			c.p.watchStarted.CompareAndSwap(0, time.Now().UnixNano())
		}
	case http.MethodHead, http.MethodOptions:
	case http.MethodPatch:
		c.p.writes.Add(1)
		if labels, err := setsShardLabel(req); err != nil {
			return nil, err
		} else if labels {
			c.p.shardLabels.Add(1)
		}
	default:
		c.p.writes.Add(1)
	}
	return c.next.RoundTrip(req)
}

// setsShardLabel tells whether a request is a patch of an object of the
// watched resource whose body names a sharding's label. The body is read
// from a copy (GetBody), or read and put back.
func setsShardLabel(req *http.Request) (bool, error) {
	if req.Body == nil || !strings.Contains(req.URL.Path, "/"+GVR.Resource+"/") {
		return false, nil
	}
	var body []byte
	var err error
	if req.GetBody != nil {
		var rc io.ReadCloser
		if rc, err = req.GetBody(); err != nil {
			return false, err
		}
		body, err = io.ReadAll(rc)
		rc.Close()
	} else {
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	if err != nil {
		return false, err
	}
	return bytes.Contains(body, []byte(ShardLabelPrefix)), nil
}

// Contender is what a contender's main gets from Start.
type Contender struct {
	Probe     *Probe
	Config    *rest.Config // instrumented
	Namespace string
}

// Start parses the contenders' common flags (-kubeconfig, -namespace,
// -cpuprofile, -memprofile), builds an instrumented client configuration,
// starts profiling if asked, serves /stats and /debug/pprof on a loopback
// port (announced as "probe: ADDR" on stdout, which the driver reads), and
// returns a context that ends on SIGINT or SIGTERM. The returned stop
// function writes the profiles; call it when the contender has stopped.
func Start() (context.Context, *Contender, func(), error) {
	// A flag set of its own: libraries (controller-runtime) register flags
	// of the same names on the global one.
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	namespace := fs.String("namespace", "default", "namespace of the objects")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	memProfile := fs.String("memprofile", "", "write a heap profile to this file at exit")
	_ = fs.Parse(os.Args[1:])

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("loading the kubeconfig %q: %w", *kubeconfig, err)
	}
	// No client-side throttling in any contender: the API server is the
	// limit being measured, not client-go's default 5 requests/s.
	cfg.QPS, cfg.Burst = -1, 0
	p := &Probe{}
	p.Instrument(cfg)

	var prof *os.File
	if *cpuProfile != "" {
		if prof, err = os.Create(*cpuProfile); err != nil {
			return nil, nil, nil, fmt.Errorf("creating the CPU profile: %w", err)
		}
		if err := rpprof.StartCPUProfile(prof); err != nil {
			return nil, nil, nil, fmt.Errorf("starting the CPU profile: %w", err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listening for the driver: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/stats", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(p.Stats())
	})
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	fmt.Printf("probe: %s\n", ln.Addr())

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	stop := func() {
		cancel()
		_ = srv.Close()
		<-served
		if prof != nil {
			rpprof.StopCPUProfile()
			_ = prof.Close()
		}
		if *memProfile != "" {
			if f, err := os.Create(*memProfile); err == nil {
				_ = rpprof.WriteHeapProfile(f)
				_ = f.Close()
			}
		}
	}
	return ctx, &Contender{Probe: p, Config: cfg, Namespace: *namespace}, stop, nil
}
