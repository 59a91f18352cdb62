package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Report is what a run measured, and the invariants it broke.
type Report struct {
	Objects int `json:"objects"`
	// ObjectsDone reached their final state: created, updated, deleted, gone.
	ObjectsDone int `json:"objects_done"`
	// Faults injected, by kind; OperatorRestarts counts every exit.
	Faults           map[string]int `json:"faults"`
	OperatorRestarts int            `json:"operator_restarts"`
	// Calls are the successful handler calls by kind (daemon: starts).
	Calls map[string]int `json:"handler_calls"`
	// Handled is how many objects each kind of handler succeeded for.
	Handled map[string]int `json:"objects_handled"`
	// Duplicates are successful calls beyond the first for one object and
	// change, by kind; AfterDeath those whose repetition came from another
	// process than the success (the operator died in between), AfterFault
	// those with another fault (an API or proxy fault) in between, and
	// Unexplained the rest (each breaks an invariant).
	Duplicates            map[string]int `json:"duplicates"`
	DuplicatesAfterDeath  int            `json:"duplicates_after_death"`
	DuplicatesAfterFault  int            `json:"duplicates_after_fault"`
	DuplicatesUnexplained int            `json:"duplicates_unexplained"`
	// DuplicatesPerKill is AfterDeath divided by the kills injected
	// (SIGKILL and SIGTERM).
	DuplicatesPerKill float64 `json:"duplicates_per_kill"`
	// InFlightAtDeaths counts the handler successes that were not on their
	// objects when the operator died (the cluster listed right after each
	// death, before the restart), summed over the deaths checked: the
	// duplicates after deaths can only come from these. Of the duplicates
	// after a death, AfterDeathInFlight were among them; AfterDeathPersisted
	// were not (the success was on the object, and the handler ran again
	// anyway: each breaks an invariant); AfterDeathUnchecked followed a
	// death whose listing failed.
	InFlightAtDeaths             int `json:"in_flight_at_deaths"`
	DeathsChecked                int `json:"deaths_checked"`
	DuplicatesAfterDeathInFlight int `json:"duplicates_after_death_in_flight"`
	DuplicatesAfterDeathPersist  int `json:"duplicates_after_death_persisted"`
	DuplicatesAfterDeathUnchk    int `json:"duplicates_after_death_unchecked"`
	// Backlog is the objects created before the operator started
	// (Config.Backlog); BacklogCreatedAtKill how many of their creations
	// had succeeded when the backlog round's SIGKILL struck, the rest
	// pending; BacklogDeath that death (its successes in flight and how
	// many ran again).
	Backlog              int    `json:"backlog,omitempty"`
	BacklogCreatedAtKill int    `json:"backlog_created_at_kill,omitempty"`
	BacklogDeath         *Death `json:"backlog_death,omitempty"`
	// Deaths are the checked deaths one by one, in order.
	Deaths []Death `json:"deaths,omitempty"`
	// Stuck are objects left in the cluster (a finalizer, a step never done).
	Stuck []string `json:"stuck"`
	// Missing are object/handler/change triples that never succeeded.
	Missing []string `json:"missing"`
	// DaemonOverlaps are objects whose daemon ran twice at once.
	DaemonOverlaps []string `json:"daemon_overlaps"`
	ErrorsLogged   int      `json:"errors_logged"`
	Panics         int      `json:"panics"`
	// QuiescenceSeconds: from the end of the last fault until every object
	// was gone (-1: never).
	QuiescenceSeconds float64 `json:"quiescence_seconds"`
	DurationSeconds   float64 `json:"duration_seconds"`
	// RSS of the operator at the start (idle) and after quiescence (idle).
	RSSBeforeMB float64 `json:"rss_before_mb"`
	RSSAfterMB  float64 `json:"rss_after_mb"`
	// The operator's live Go heap (after a collection): HeapFreshMB at
	// the start, 2 s after the first process started (with a backlog, after
	// the backlog's kill: 2 s after its successor started); HeapRoundsMB after
	// each round, idle; HeapBeforeMB and HeapAfterMB are the second and the
	// last of these, on one process (the memory invariant, see memory).
	HeapFreshMB  float64   `json:"heap_live_fresh_mb"`
	HeapBeforeMB float64   `json:"heap_live_before_mb"`
	HeapAfterMB  float64   `json:"heap_live_after_mb"`
	HeapRoundsMB []float64 `json:"heap_live_rounds_mb"`
	Failures     []string  `json:"failures"`
	Dir          string    `json:"dir,omitempty"`
}

// Death is one death of the operator: the successes of the process that
// were not on their objects when it died, and how many of them ran again.
type Death struct {
	PID        int `json:"pid"`
	InFlight   int `json:"in_flight"`
	Duplicates int `json:"duplicates"`
}

// The changes each object must see handled, by handler kind.
var wanted = map[string]string{"create": "-", "sub": "-", "update": "v2", "field": "v2", "delete": "-"}

type retInfo struct {
	pid, epoch int
	active     bool
}

// memory is the idle operator's memory at the start and after each round,
// in bytes. The invariant is on the live heap (after a collection): what
// kopfgo holds. RSS is reported: it also counts what the Go runtime has not
// yet returned to the system, which it does on its own schedule.
//
// The invariant compares the heap after the last round with the heap after
// the second, on the one process that ran the rounds after the chaos round
// (the first): the objects of a round must leave nothing behind. A process
// grows once, to a size that follows the most objects it has handled at
// once, not how many it has handled: heap profiles of the chaos operator
// (-heap-profiles) show what it holds over the fresh process of the start,
// 2.7 MB once idle after three rounds of 2000 objects without faults
// (sampling every 4096 bytes; 1.2 MB after 600, sampling every 512):
// 1.72 MB of goroutine descriptors (runtime.malg: the Go runtime keeps
// every goroutine it has made, for reuse, so it holds as many as ever ran
// at once: each object has a daemon, a timer and its passes), 0.33 MB of
// idle HTTP/2 connections (bufio and TLS buffers; closed after 90 s idle),
// 0.13 MB of the JSON decoder's key and value caches (bounded: 4096 keys,
// 1024 values), 0.13 MB of Go maps at their peak size (maps do not shrink:
// the informer's store, the daemons' live set, the reactor's states and
// workers), and no object, state, logger or daemon of an object that is
// gone. On that process the heap after each round was 4.41, 4.47 and 4.46
// MB (4.1, 4.2 after two rounds of 600). The chaos round's last process,
// restarted by the last kill with a quarter of the objects left, handles
// fewer at once than a whole round does: the second round makes it grow
// (3.1 → 5.7 MB with 2000 objects), which is why the third is compared with
// the second, not with the first, nor with the fresh process (1.9 → 3.8–4.1
// MB with 2000 objects made the former invariant fail, for these reasons).
//
// slack allows for idle connections opened or closed between the readings
// (30–40 KB each) and for a round that handles more objects at once than
// the one before it.
const slack = 512 << 10

type memory struct {
	rssBefore, rssAfter int64
	heapFresh           int64
	rounds              []heapReading
}

func (r *run) report(quiescence, took time.Duration, mem memory) (*Report, error) {
	mb := func(n int64) float64 { return float64(n) / (1 << 20) }
	rep := &Report{
		Objects: r.cfg.N, Faults: map[string]int{}, Calls: map[string]int{}, Handled: map[string]int{},
		Duplicates: map[string]int{}, DurationSeconds: took.Seconds(),
		RSSBeforeMB: mb(mem.rssBefore), RSSAfterMB: mb(mem.rssAfter), HeapFreshMB: mb(mem.heapFresh),
	}
	for _, h := range mem.rounds {
		rep.HeapRoundsMB = append(rep.HeapRoundsMB, mb(h.bytes))
	}
	before, after := mem.rounds[min(1, len(mem.rounds)-1)], mem.rounds[len(mem.rounds)-1]
	rep.HeapBeforeMB, rep.HeapAfterMB = mb(before.bytes), mb(after.bytes)
	if quiescence < 0 {
		rep.QuiescenceSeconds = -1
	} else {
		rep.QuiescenceSeconds = quiescence.Seconds()
	}
	r.mu.Lock()
	for k, v := range r.faults {
		rep.Faults[k] = v
	}
	r.mu.Unlock()

	f, err := os.Open(r.journal.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r.mu.Lock()
	snapshots := maps.Clone(r.snapshots)
	r.mu.Unlock()
	lastRet, err := rep.readJournal(f, snapshots)
	if err != nil {
		return nil, err
	}
	kills := rep.Faults[FaultKill] + rep.Faults[FaultTerm] + rep.Faults[FaultBacklogKill]
	if kills > 0 {
		rep.DuplicatesPerKill = float64(rep.DuplicatesAfterDeath) / float64(kills)
	}

	if r.cfg.Backlog > 0 {
		r.mu.Lock()
		bk := r.backlogKill
		r.mu.Unlock()
		rep.Backlog, rep.BacklogCreatedAtKill = r.cfg.Backlog, bk.created
		for i := range rep.Deaths {
			if rep.Deaths[i].PID == bk.pid {
				rep.BacklogDeath = &rep.Deaths[i]
			}
		}
	}
	for i := range r.cfg.N * r.cfg.Rounds {
		obj := namespace + "/" + objectName(i)
		for kind, change := range wanted {
			if _, ok := lastRet[kind+" "+obj+" "+change]; !ok {
				rep.Missing = append(rep.Missing, kind+" "+obj+" "+change)
			}
		}
	}
	slices.Sort(rep.Missing)
	rep.ObjectsDone = int(r.gone.Load())
	rep.Objects = r.cfg.N * r.cfg.Rounds

	list, err := r.dyn.Resource(kexGVR).Namespace(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing what is left: %w", err)
	}
	for _, u := range list.Items {
		rep.Stuck = append(rep.Stuck, fmt.Sprintf("%s (finalizers %v, deleting %v)", u.GetName(), u.GetFinalizers(), u.GetDeletionTimestamp() != nil))
	}
	rep.ErrorsLogged, rep.Panics, err = scanLog(r.op.logPath)
	if err != nil {
		return nil, err
	}

	fail := func(format string, args ...any) { rep.Failures = append(rep.Failures, fmt.Sprintf(format, args...)) }
	if rep.ObjectsDone != rep.Objects {
		fail("%d of %d objects reached their final state", rep.ObjectsDone, rep.Objects)
	}
	if len(rep.Stuck) > 0 {
		fail("%d objects left in the cluster, e.g. %s", len(rep.Stuck), rep.Stuck[0])
	}
	if len(rep.Missing) > 0 {
		fail("%d handler calls never succeeded, e.g. %s", len(rep.Missing), rep.Missing[0])
	}
	if rep.DuplicatesUnexplained > 0 {
		fail("%d handlers ran again after a success with no fault in between", rep.DuplicatesUnexplained)
	}
	if rep.DuplicatesAfterDeathPersist > 0 {
		// Each duplicate after a death must be a success that was not yet
		// on its object when the operator died: together, no more than
		// were in flight at the deaths.
		fail("%d handlers ran again after a death although their success was on the object at the death (%d in flight at %d deaths)",
			rep.DuplicatesAfterDeathPersist, rep.InFlightAtDeaths, rep.DeathsChecked)
	}
	if len(rep.DaemonOverlaps) > 0 {
		fail("daemons ran twice at once for %d objects, e.g. %s", len(rep.DaemonOverlaps), rep.DaemonOverlaps[0])
	}
	if rep.Panics > 0 {
		fail("%d panics logged", rep.Panics)
	}
	if rep.QuiescenceSeconds < 0 {
		fail("no quiescence within %s after the last fault", r.cfg.Quiescence)
	}
	for _, kind := range r.schedule {
		if rep.Faults[kind] == 0 {
			fail("fault %s was never injected", kind)
		}
	}
	switch {
	case r.cfg.Backlog == 0:
	case rep.BacklogDeath == nil:
		fail("the backlog round's SIGKILL struck no checked death (the listing at the death failed)")
	case rep.BacklogCreatedAtKill >= r.cfg.Backlog:
		fail("the backlog round's SIGKILL struck with all %d objects of the backlog created: nothing was pending", r.cfg.Backlog)
	}
	switch {
	case mem.rssBefore == 0 || mem.rssAfter == 0 || mem.heapFresh == 0 || slices.ContainsFunc(mem.rounds, func(h heapReading) bool { return h.bytes == 0 }):
		fail("the operator's memory could not be read (RSS before %d, after %d; heap at the start %d, after the rounds %v bytes)", mem.rssBefore, mem.rssAfter, mem.heapFresh, mem.rounds)
	case len(mem.rounds) < 3:
		// Nothing to compare on one warmed-up process (see memory).
	case before.pid != after.pid:
		fail("the operator restarted during the rounds without faults (pid %d, then %d): its memory cannot be compared", before.pid, after.pid)
	case after.bytes > before.bytes*110/100+slack:
		fail("the operator holds %.1f MB of live heap after the last round, more than 10%% (and %d KiB) over %.1f MB after the second", rep.HeapAfterMB, slack>>10, rep.HeapBeforeMB)
	}
	return rep, nil
}

// readJournal counts what the journal records into rep: handler calls,
// objects handled, daemon overlaps, deaths, and the duplicates, each
// classified by what lies between it and the previous success (a death, a
// fault, nothing), those after a death checked against the successes in
// flight at that death (snapshots, by the dead process's pid). It returns
// the latest success of each handler, object and change.
func (rep *Report) readJournal(journal io.Reader, snapshots map[int]snapshot) (map[string]retInfo, error) {
	var (
		epoch, deaths int
		active        = map[string]bool{}
		lastRet       = map[string]retInfo{}      // key → its latest success
		retsOf        = map[int]map[string]bool{} // pid → keys whose latest success it made
		inFlight      = map[int]map[string]bool{} // dead pid → its successes not on the objects
		deathIndex    = map[int]int{}             // dead pid → its index in rep.Deaths
		lastInv       = map[string]retInfo{}
		handled       = map[string]map[string]bool{}
		daemons       = map[string]int{} // object → pid of its running daemon
		alive         = map[int]bool{}
		stopPid       = 0
	)
	sc := bufio.NewScanner(journal)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 5 {
			continue // a line cut by a kill mid-write cannot happen with one write per line, but be safe
		}
		event, kind, obj, change := fields[0], fields[1], fields[2], fields[3]
		pid, _ := strconv.Atoi(fields[4])
		key := kind + " " + obj + " " + change
		switch event {
		case "fault":
			epoch++
			active[kind] = true
		case "fault-end":
			epoch++
			delete(active, kind)
		case "start":
			alive[pid] = true
			stopPid = pid
		case "exit":
			epoch++
			deaths++
			delete(alive, pid)
			if snap, ok := snapshots[pid]; ok && snap != nil {
				set := map[string]bool{}
				for k := range retsOf[pid] {
					f := strings.Fields(k)
					if !snap.persisted(f[0], strings.TrimPrefix(f[1], namespace+"/"), f[2]) {
						set[k] = true
					}
				}
				inFlight[pid] = set
				rep.InFlightAtDeaths += len(set)
				rep.DeathsChecked++
				deathIndex[pid] = len(rep.Deaths)
				rep.Deaths = append(rep.Deaths, Death{PID: pid, InFlight: len(set)})
			}
			for o, p := range daemons {
				if p == pid {
					delete(daemons, o)
				}
			}
		case "inv":
			lastInv[key] = retInfo{pid: pid, epoch: epoch}
			if kind == "daemon-twice" {
				rep.DaemonOverlaps = append(rep.DaemonOverlaps, obj)
			}
			if kind == "daemon" {
				if p, ok := daemons[obj]; ok && alive[p] && p != pid {
					rep.DaemonOverlaps = append(rep.DaemonOverlaps, obj)
				}
				daemons[obj] = pid
				rep.Calls["daemon"]++
				if handled["daemon"] == nil {
					handled["daemon"] = map[string]bool{}
				}
				handled["daemon"][obj] = true
			}
		case "ret":
			if kind == "daemon" {
				delete(daemons, obj)
				continue
			}
			rep.Calls[kind]++
			if handled[kind] == nil {
				handled[kind] = map[string]bool{}
			}
			handled[kind][obj] = true
			if kind == "timer" {
				continue
			}
			prev, seen := lastRet[key]
			lastRet[key] = retInfo{pid: pid, epoch: epoch, active: len(active) > 0}
			if seen {
				delete(retsOf[prev.pid], key)
			}
			if retsOf[pid] == nil {
				retsOf[pid] = map[string]bool{}
			}
			retsOf[pid][key] = true
			if !seen {
				continue
			}
			rep.Duplicates[kind]++
			inv := lastInv[key]
			switch {
			case inv.pid != prev.pid:
				// The process of the previous success died before this call.
				rep.DuplicatesAfterDeath++
				switch set, checked := inFlight[prev.pid]; {
				case !checked:
					rep.DuplicatesAfterDeathUnchk++
				case set[key]:
					rep.DuplicatesAfterDeathInFlight++
					rep.Deaths[deathIndex[prev.pid]].Duplicates++
				default:
					rep.DuplicatesAfterDeathPersist++
				}
			case inv.epoch != prev.epoch || prev.active || len(active) > 0:
				rep.DuplicatesAfterFault++
			default:
				rep.DuplicatesUnexplained++
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the journal: %w", err)
	}
	rep.OperatorRestarts = deaths
	if stopPid != 0 && !alive[stopPid] {
		rep.OperatorRestarts-- // the last exit is the stop at the end of the run
	}
	for kind, objs := range handled {
		rep.Handled[kind] = len(objs)
	}
	return lastRet, nil
}

// scanLog counts the error lines and the panics in the operator's output.
func scanLog(path string) (errs, panics int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, "[ERROR") || strings.Contains(l, " ERROR ") {
			errs++
		}
		if strings.HasPrefix(l, "panic:") || strings.Contains(l, "panicked") {
			panics++
		}
	}
	return errs, panics, sc.Err()
}

// Print writes the report as a table.
func (rep *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "%-34s %d\n", "objects", rep.Objects)
	fmt.Fprintf(w, "%-34s %d\n", "objects done (created→updated→gone)", rep.ObjectsDone)
	kinds := make([]string, 0, len(rep.Faults))
	total := 0
	for k, v := range rep.Faults {
		kinds = append(kinds, k)
		total += v
	}
	slices.Sort(kinds)
	fmt.Fprintf(w, "%-34s %d\n", "faults injected", total)
	for _, k := range kinds {
		fmt.Fprintf(w, "  %-32s %d\n", k, rep.Faults[k])
	}
	fmt.Fprintf(w, "%-34s %d\n", "operator restarts", rep.OperatorRestarts)
	fmt.Fprintf(w, "%-34s %s\n", "handler calls (succeeded)", "kind: calls / objects / duplicates")
	hk := make([]string, 0, len(rep.Calls))
	for k := range rep.Calls {
		hk = append(hk, k)
	}
	slices.Sort(hk)
	for _, k := range hk {
		fmt.Fprintf(w, "  %-32s %d / %d / %d\n", k, rep.Calls[k], rep.Handled[k], rep.Duplicates[k])
	}
	fmt.Fprintf(w, "%-34s %d after a death, %d after another fault, %d unexplained\n", "duplicates",
		rep.DuplicatesAfterDeath, rep.DuplicatesAfterFault, rep.DuplicatesUnexplained)
	fmt.Fprintf(w, "%-34s %.2f\n", "duplicates per kill (kill+term)", rep.DuplicatesPerKill)
	fmt.Fprintf(w, "%-34s %d successes not yet on their objects at %d deaths; after a death %d of them ran again, %d already persisted, %d unchecked\n", "in flight at deaths",
		rep.InFlightAtDeaths, rep.DeathsChecked, rep.DuplicatesAfterDeathInFlight, rep.DuplicatesAfterDeathPersist, rep.DuplicatesAfterDeathUnchk)
	if len(rep.Deaths) > 0 {
		var per []string
		for _, d := range rep.Deaths {
			per = append(per, fmt.Sprintf("%d→%d", d.InFlight, d.Duplicates))
		}
		fmt.Fprintf(w, "%-34s %s\n", "  by death: in flight → ran again", strings.Join(per, " "))
	}
	if rep.Backlog > 0 {
		d := Death{}
		if rep.BacklogDeath != nil {
			d = *rep.BacklogDeath
		}
		fmt.Fprintf(w, "%-34s %d objects before the start; SIGKILL with %d created, %d successes in flight → %d ran again\n", "backlog",
			rep.Backlog, rep.BacklogCreatedAtKill, d.InFlight, d.Duplicates)
	}
	fmt.Fprintf(w, "%-34s %d\n", "objects stuck", len(rep.Stuck))
	fmt.Fprintf(w, "%-34s %d\n", "handler calls missing", len(rep.Missing))
	fmt.Fprintf(w, "%-34s %d\n", "daemon overlaps", len(rep.DaemonOverlaps))
	fmt.Fprintf(w, "%-34s %d\n", "errors logged", rep.ErrorsLogged)
	fmt.Fprintf(w, "%-34s %d\n", "panics", rep.Panics)
	fmt.Fprintf(w, "%-34s %.1f s\n", "quiescence after the last fault", rep.QuiescenceSeconds)
	fmt.Fprintf(w, "%-34s %.1f s\n", "duration", rep.DurationSeconds)
	fmt.Fprintf(w, "%-34s %.1f MB → %.1f MB\n", "operator RSS, idle before → after", rep.RSSBeforeMB, rep.RSSAfterMB)
	fmt.Fprintf(w, "%-34s %.1f MB at the start; after each round %.1f MB\n", "operator live heap", rep.HeapFreshMB, rep.HeapRoundsMB)
	if len(rep.Failures) == 0 {
		fmt.Fprintln(w, "invariants: all hold")
	}
	for _, f := range rep.Failures {
		fmt.Fprintln(w, "FAILED:", f)
	}
	if rep.Dir != "" {
		fmt.Fprintln(w, "journal and logs:", rep.Dir)
	}
}

// WriteJSON writes the report to path.
func (rep *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if dir := filepath.Dir(path); dir != "" {
		os.MkdirAll(dir, 0o755)
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
