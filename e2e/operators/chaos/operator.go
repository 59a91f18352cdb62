// Package chaos is the operator of the chaos run (e2e/chaos, make chaos):
// create, update, field and delete handlers, a sub-handler, a daemon and a
// timer on KopfExamples, each recording its calls in a journal outside the
// operator so that the counts survive SIGKILL.
//
// The journal (KOPFGO_CHAOS_JOURNAL) gets one line per event, appended with
// O_APPEND in one write before the handler goes on:
//
//	inv|ret  KIND  NAMESPACE/NAME  CHANGE  PID
//
// "inv" is written when a handler starts, "ret" just before it returns
// success; CHANGE identifies the change handled (the spec's generation of
// the field, "-" where there is one change only), so that two "ret" lines of
// one KIND, object and CHANGE are a duplicate. The daemon writes "inv" when
// it starts and "ret" when it stops; the timer writes "ret" per tick. On
// SIGUSR1 the operator collects garbage and writes "mem heap-live -/- BYTES
// PID": the Go heap it still holds, which the run compares before and
// after (RSS alone also counts what the runtime has not yet given back).
//
// For finding what that heap holds, KOPFGO_CHAOS_HEAP_PROFILES names a
// directory: each SIGUSR1 then also writes the heap profile taken after the
// collection there, as heap-PID-SEQ.pb.gz (go tool pprof -sample_index
// inuse_space -base before after), sampled every KOPFGO_CHAOS_MEM_PROFILE_RATE
// bytes (runtime.MemProfileRate; default 512 when profiling: precise, and
// slow).
//
// KOPFGO_CHAOS_NO_TIMER (non-empty) leaves the timer out, for runs of many
// objects that count other things. KOPFGO_CHAOS_RESUME (non-empty) adds a
// resume handler, journalled as "ret resume", for runs that count how often
// a replica resumes the objects it lists. KOPFGO_CHAOS_GLOBAL_INDEX
// (non-empty) adds a global index (kopfgo.Global) of the KopfExamples by
// namespace, whose size each daemon journals as "ret gindex NS/NAME SIZE
// PID" when it starts and every second after, for runs that check that a
// sharded replica's global index holds every object.
package chaos

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/kopfgo/kopfgo"
)

func init() {
	profiles := os.Getenv("KOPFGO_CHAOS_HEAP_PROFILES")
	if profiles != "" {
		runtime.MemProfileRate = 512
		if v := os.Getenv("KOPFGO_CHAOS_MEM_PROFILE_RATE"); v != "" {
			rate, err := strconv.Atoi(v)
			if err != nil || rate <= 0 {
				panic(fmt.Sprintf("KOPFGO_CHAOS_MEM_PROFILE_RATE=%q: a positive number of bytes, please", v))
			}
			runtime.MemProfileRate = rate
		}
	}
	go reportHeap(profiles)
	kopfgo.On.Startup(configure, kopfgo.ID("configure"))
	kopfgo.On.Create("kopfexamples", create, kopfgo.ID("create_fn"))
	kopfgo.On.Update("kopfexamples", update, kopfgo.ID("update_fn"))
	kopfgo.On.Field("kopfexamples", "spec.field", field, kopfgo.ID("field_fn"))
	kopfgo.On.Delete("kopfexamples", remove, kopfgo.ID("delete_fn"))
	kopfgo.On.Daemon("kopfexamples", daemon, kopfgo.ID("daemon_fn"), kopfgo.CancellationTimeout(2*time.Second))
	if os.Getenv("KOPFGO_CHAOS_GLOBAL_INDEX") != "" {
		byNamespace = kopfgo.OnIndex(kopfgo.On, "kopfexamples", func(ctx context.Context, o *kopfgo.Object) (map[string]string, error) {
			return map[string]string{o.Namespace: o.Name}, nil
		}, kopfgo.ID("by_namespace"), kopfgo.Global())
	}
	if os.Getenv("KOPFGO_CHAOS_RESUME") != "" {
		kopfgo.On.Resume("kopfexamples", resume, kopfgo.ID("resume_fn"))
	}
	if os.Getenv("KOPFGO_CHAOS_NO_TIMER") == "" {
		kopfgo.On.Timer("kopfexamples", timer, kopfgo.ID("timer_fn"), kopfgo.Interval(2*time.Second))
	}
}

// byNamespace is the global index of KOPFGO_CHAOS_GLOBAL_INDEX; nil
// without it.
var byNamespace *kopfgo.Index[string, string]

var (
	journalOnce sync.Once
	journal     *os.File
	journalMu   sync.Mutex
)

// record appends one line in one write: once written, the line is in the
// kernel's page cache, which a SIGKILL of the process right after does not
// touch, and the driver reads it on the same machine. There is no fsync:
// it guards against the machine's crash, which the run does not inject, and
// syncing every line (a thousand timer ticks a second with 2000 objects)
// queued the handlers behind the disk, stretching the time between a
// handler's success and its return, which the duplicates measure.
func record(event, kind, ns, name, change string) {
	journalOnce.Do(func() {
		path := os.Getenv("KOPFGO_CHAOS_JOURNAL")
		if path == "" {
			return
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			panic(fmt.Sprintf("the chaos journal: %v", err)) // the run cannot count without it
		}
		journal = f
	})
	if journal == nil {
		return
	}
	line := fmt.Sprintf("%s %s %s/%s %s %d\n", event, kind, ns, name, change, os.Getpid())
	journalMu.Lock()
	defer journalMu.Unlock()
	if _, err := journal.WriteString(line); err != nil {
		panic(fmt.Sprintf("the chaos journal: %v", err))
	}
}

// configure shortens the peering lifetime for the peering tests
// (KOPFGO_CHAOS_PEERING_LIFETIME, a Go duration), as a user's startup
// handler may.
func configure(ctx context.Context, a *kopfgo.Activity) error {
	if v := os.Getenv("KOPFGO_CHAOS_PEERING_LIFETIME"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("KOPFGO_CHAOS_PEERING_LIFETIME: %w", err)
		}
		a.Settings.Peering.Lifetime = d
	}
	return nil
}

// reportHeap answers each SIGUSR1 with the live heap after a collection,
// and writes the heap profile into the directory profiles if not empty.
func reportHeap(profiles string) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	for seq := 1; ; seq++ {
		<-sigs
		runtime.GC()
		metrics.Read(sample)
		if profiles != "" {
			// The profile is the heap as of the last completed collection:
			// the one just made.
			if err := writeHeapProfile(filepath.Join(profiles, fmt.Sprintf("heap-%d-%d.pb.gz", os.Getpid(), seq))); err != nil {
				panic(fmt.Sprintf("the chaos heap profile: %v", err))
			}
		}
		record("mem", "heap-live", "-", "-", strconv.FormatUint(sample[0].Value.Uint64(), 10))
	}
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// work is a little time in the handler, so that kills land mid-handler too.
func work(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(20 * time.Millisecond):
	}
}

func changeOf(c *kopfgo.Change) string {
	if v, ok := c.Spec["field"].(string); ok {
		return v
	}
	return "-"
}

func create(ctx context.Context, c *kopfgo.Change) (any, error) {
	record("inv", "create", c.Namespace, c.Name, "-")
	work(ctx)
	if err := kopfgo.Execute(ctx, map[string]kopfgo.ChangeFunc{"sub": sub}); err != nil {
		return nil, err
	}
	record("ret", "create", c.Namespace, c.Name, "-")
	return map[string]any{"created": true}, nil
}

func sub(ctx context.Context, c *kopfgo.Change) (any, error) {
	record("inv", "sub", c.Namespace, c.Name, "-")
	work(ctx)
	record("ret", "sub", c.Namespace, c.Name, "-")
	return nil, nil
}

func resume(ctx context.Context, c *kopfgo.Change) (any, error) {
	record("ret", "resume", c.Namespace, c.Name, "-")
	return nil, nil
}

func update(ctx context.Context, c *kopfgo.Change) (any, error) {
	record("inv", "update", c.Namespace, c.Name, changeOf(c))
	work(ctx)
	record("ret", "update", c.Namespace, c.Name, changeOf(c))
	return nil, nil
}

func field(ctx context.Context, c *kopfgo.Change) (any, error) {
	record("inv", "field", c.Namespace, c.Name, changeOf(c))
	work(ctx)
	record("ret", "field", c.Namespace, c.Name, changeOf(c))
	return nil, nil
}

func remove(ctx context.Context, c *kopfgo.Change) (any, error) {
	record("inv", "delete", c.Namespace, c.Name, "-")
	work(ctx)
	record("ret", "delete", c.Namespace, c.Name, "-")
	return nil, nil
}

// running detects a second daemon of one object in this process.
var running sync.Map

func daemon(ctx context.Context, d *kopfgo.Spawn) (any, error) {
	key := d.Namespace + "/" + d.Name
	if _, twice := running.LoadOrStore(key, true); twice {
		record("inv", "daemon-twice", d.Namespace, d.Name, "-")
	}
	record("inv", "daemon", d.Namespace, d.Name, "-")
	if byNamespace != nil {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for ctx.Err() == nil {
			record("ret", "gindex", d.Namespace, d.Name, strconv.Itoa(len(byNamespace.Get(d.Namespace))))
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}
	<-ctx.Done()
	running.Delete(key)
	record("ret", "daemon", d.Namespace, d.Name, "-")
	return nil, ctx.Err()
}

func timer(ctx context.Context, t *kopfgo.Spawn) (any, error) {
	record("ret", "timer", t.Namespace, t.Name, "-")
	return nil, nil
}
