//go:build e2e

package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kopfgo/kopfgo/e2e/runner"
	"github.com/kopfgo/kopfgo/internal/conventions"
	modes "github.com/kopfgo/kopfgo/internal/replicas"
)

// shardingObjects is the first batch's size; the two later batches are
// half of it each. The 2000 runs by hand:
//
//	go test -tags e2e -count=1 -p 1 -run TestSharding ./e2e/ -args -sharding-objects=2000
var shardingObjects = flag.Int("sharding-objects", 300, "objects of TestShardingSpreadsObjectsOverReplicas's first batch")

const shardingShards = 12

// TestShardingSpreadsObjectsOverReplicas: three replicas with --shards
// share the objects, each handling those of the shards whose Leases it
// holds. A replica SIGKILLed: the others take its shards once its Leases
// expire, and finish its objects' pending work. A replica added: shards
// move to it without any object handled twice. Daemons of moved objects
// never run on two replicas at once in the journal's order (compat:
// replicas-sharding).
func TestShardingSpreadsObjectsOverReplicas(t *testing.T) {
	ns := namespace(t)
	name := "kopfgo-e2e"
	rs := newShardedReplicas(t, ns, name)
	replicas, journal := rs.pods, rs.journal
	start := func(pod string) *runner.Process { return rs.start(pod) }
	holders, balanced := rs.holders, rs.balanced
	uids := map[string]string{} // object name → uid
	var uidsMu sync.Mutex
	create := func(from, to int) {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for i := from; i < to; i++ {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				obj := objYAML(t)
				obj["metadata"].(map[string]any)["name"] = fmt.Sprintf("kex-%04d", i)
				u := createKex(t, ns, obj)
				uidsMu.Lock()
				uids[u.GetName()] = string(u.GetUID())
				uidsMu.Unlock()
			})
		}
		wg.Wait()
	}
	// allHandled waits until every object created has finished its
	// creation cycle.
	allHandled := func(what string) {
		eventually(t, 3*time.Minute, what, func() (bool, error) {
			list, err := dyn(t).Resource(kexGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			done := 0
			for i := range list.Items {
				if handled(&list.Items[i]) {
					done++
				}
			}
			return done == len(uids), fmt.Errorf("%d of %d handled", done, len(uids))
		})
	}
	pidOf := func(pod string) string { return strconv.Itoa(replicas[pod].Pid()) }
	creations := rs.creations

	// Three replicas, balanced before any object exists.
	for _, pod := range []string{"replica-a", "replica-b", "replica-c"} {
		start(pod)
	}
	t.Logf("3 replicas balanced %d shards in %s", shardingShards, balanced("3 replicas to balance", "replica-a", "replica-b", "replica-c").Round(100*time.Millisecond))
	owner := holders()

	n := *shardingObjects
	began := time.Now()
	create(0, n)
	allHandled("the first batch handled")
	t.Logf("%d objects created and handled by 3 replicas in %s", n, time.Since(began).Round(100*time.Millisecond))
	split := map[string]int{}
	byCreator := creations()
	for i := 0; i < n; i++ {
		obj := fmt.Sprintf("kex-%04d", i)
		want := owner[conventions.Shard(ns, obj, shardingShards)]
		if got := byCreator[obj]; len(got) != 1 || got[0] != want {
			t.Errorf("%s (shard %d of %s) was created by %v, want once by %s", obj, conventions.Shard(ns, obj, shardingShards), want, got, want)
		}
		split[want]++
	}
	t.Logf("split of %d objects: replica-a %d, replica-b %d, replica-c %d", n, split["replica-a"], split["replica-b"], split["replica-c"])

	// SIGKILL one replica amid a batch: its shards go to the others once
	// its Leases expire, and its objects' pending work completes there.
	create(n, n+n/2)
	victim := replicas["replica-c"]
	victim.Kill()
	<-victim.Done()
	killed := time.Now()
	journalKill(t, journal, victim.Pid())
	handover := balanced("the survivors to take the killed replica's shards", "replica-a", "replica-b")
	t.Logf("handover after SIGKILL: %s (lease duration 6s, retry period 1s)", handover.Round(100*time.Millisecond))
	allHandled("the second batch handled")
	t.Logf("second batch done %s after the kill", time.Since(killed).Round(100*time.Millisecond))

	// Add a replica amid a batch: shards move to it, nothing twice.
	create(n+n/2, 2*n)
	joined := time.Now()
	start("replica-d")
	rebalance := balanced("the shards to rebalance to the new replica", "replica-a", "replica-b", "replica-d")
	t.Logf("rebalance to a joining replica: %s", rebalance.Round(100*time.Millisecond))
	allHandled("the third batch handled")
	t.Logf("third batch done %s after the join", time.Since(joined).Round(100*time.Millisecond))

	// Every object was created once, except those whose creation the
	// killed replica finished but could not record (the at-least-once
	// window of SIGKILL): then it ran first on the killed replica.
	twice := 0
	for obj, pods := range creations() {
		switch {
		case len(pods) == 1:
		case len(pods) == 2 && pods[0] == "replica-c" && pods[1] != "replica-c":
			twice++
		default:
			t.Errorf("%s was created by %v, want once", obj, pods)
		}
	}
	if got := len(creations()); got != 2*n {
		t.Errorf("%d objects have been created, want %d", got, 2*n)
	}
	t.Logf("%d objects created again after the SIGKILL (the killed replica's creations in flight)", twice)

	// The daemons end up on the shards' holders, one per object, and never
	// ran on two replicas at once.
	eventually(t, 2*time.Minute, "every object's daemon to run on its shard's holder only", func() (bool, error) {
		owner := holders()
		running, _ := daemonsRunning(t, journal)
		for obj := range uids {
			want := pidOf(owner[conventions.Shard(ns, obj, shardingShards)])
			if got := running[ns+"/"+obj]; !slices.Equal(got, []string{want}) {
				return false, fmt.Errorf("%s's daemon runs in %v, want in %s", obj, got, want)
			}
		}
		return true, nil
	})
	_, overlaps := daemonsRunning(t, journal)
	for _, o := range overlaps {
		t.Error(o)
	}
	for _, f := range journalLines(t, journal) {
		if f[1] == "daemon-twice" {
			t.Errorf("two daemons of %s at once in pid %s", f[2], f[4])
		}
	}

	for pod, p := range replicas {
		if p == victim {
			continue
		}
		if n := p.Count("Acquired shard"); n == 0 {
			t.Errorf("%s never logged acquiring a shard", pod)
		}
	}
	if n := replicas["replica-a"].Count("Released shard"); n == 0 {
		t.Errorf("replica-a never released a shard to a joining replica")
	}
}

// shardedReplicas are replicas of the chaos operator (e2e/operators/chaos)
// sharing shards of the objects of one namespace, with one journal.
type shardedReplicas struct {
	t                      *testing.T
	bin, journal, ns, name string
	pods                   map[string]*runner.Process // by POD_NAME
	env                    []string                   // the replicas' environment besides the journal's
}

func newShardedReplicas(t *testing.T, ns, name string) *shardedReplicas {
	return &shardedReplicas{t: t, bin: buildChaos(t), journal: filepath.Join(t.TempDir(), "journal"), ns: ns, name: name,
		pods: map[string]*runner.Process{}}
}

// start runs a replica named pod, with short Leases unless the extra
// flags say otherwise.
func (s *shardedReplicas) start(pod string, extra ...string) *runner.Process {
	args := append([]string{"-n", s.ns, "--shards", strconv.Itoa(shardingShards), "--shards-name", s.name, "--shards-namespace", s.ns,
		"--shards-lease-duration", "6s", "--shards-renew-deadline", "4s", "--shards-retry-period", "1s"}, extra...)
	env := append([]string{"KOPFGO_CHAOS_JOURNAL=" + s.journal, "KOPFGO_CHAOS_NO_TIMER=1", "POD_NAME=" + pod}, s.env...)
	p := startBinary(s.t, s.bin, env, args...)
	s.pods[pod] = p
	return p
}

// holders are the shards' live holders by POD_NAME ("" for none).
func (s *shardedReplicas) holders() []string {
	t := s.t
	out := make([]string, shardingShards)
	list, err := kube(t).CoordinationV1().Leases(s.ns).List(context.Background(), metav1.ListOptions{LabelSelector: modes.ShardingLabel + "=" + s.name})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list.Items {
		rest, ok := strings.CutPrefix(l.Name, s.name+"-shard-")
		i, err := strconv.Atoi(rest)
		if !ok || err != nil || l.Spec.HolderIdentity == nil {
			continue
		}
		pod, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
		if p := s.pods[pod]; p != nil && i < shardingShards {
			select {
			case <-p.Done(): // a dead replica holds nothing
			default:
				out[i] = pod
			}
		}
	}
	return out
}

// balanced waits until the pods hold every shard, evenly, and tells how
// long that took.
func (s *shardedReplicas) balanced(what string, pods ...string) time.Duration {
	began := time.Now()
	eventually(s.t, 2*time.Minute, what, func() (bool, error) {
		count := map[string]int{}
		for _, h := range s.holders() {
			count[h]++
		}
		for _, pod := range pods {
			if c := count[pod]; c < shardingShards/len(pods) || c > (shardingShards+len(pods)-1)/len(pods) {
				return false, fmt.Errorf("holders %v", s.holders())
			}
		}
		return count[""] == 0, fmt.Errorf("holders %v", s.holders())
	})
	return time.Since(began)
}

// podOf is the replica of a process id.
func (s *shardedReplicas) podOf(pid string) string {
	for pod, p := range s.pods {
		if strconv.Itoa(p.Pid()) == pid {
			return pod
		}
	}
	return "?" + pid
}

// creations are the "ret create" lines per object: the pods in order.
func (s *shardedReplicas) creations() map[string][]string {
	out := map[string][]string{}
	for _, f := range journalLines(s.t, s.journal) {
		if f[0] == "ret" && f[1] == "create" {
			_, obj, _ := strings.Cut(f[2], "/")
			out[obj] = append(out[obj], s.podOf(f[4]))
		}
	}
	return out
}

// checkLabelled checks that every object of the namespace is labelled
// with its key's shard.
func (s *shardedReplicas) checkLabelled() {
	t := s.t
	list, err := dyn(t).Resource(kexGVR).Namespace(s.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	label := conventions.ShardLabel(s.name)
	for i := range list.Items {
		u := &list.Items[i]
		if got, want := u.GetLabels()[label], strconv.Itoa(conventions.Shard(s.ns, u.GetName(), shardingShards)); got != want {
			t.Errorf("%s is labelled with shard %q, want %s (its key's)", u.GetName(), got, want)
		}
	}
}

// settledCreations are the creations once the handler calls have stopped
// growing (settle).
func (s *shardedReplicas) settledCreations() map[string][]string {
	settle(s.t, func() int {
		total := 0
		for _, pods := range s.creations() {
			total += len(pods)
		}
		return total
	})
	return s.creations()
}

// createKexes creates n objects named prefix-000 on, 8 at a time. The
// goroutines report failures with t.Errorf (t.Fatal belongs to the test's
// own goroutine), and the test stops once they are done.
func createKexes(t *testing.T, ns, prefix string, n int) {
	t.Helper()
	d, base := dyn(t), objYAML(t)
	var wg sync.WaitGroup
	var failed atomic.Bool
	sem := make(chan struct{}, 8)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(base)}
			u.SetName(fmt.Sprintf("%s-%03d", prefix, i))
			if _, err := d.Resource(kexGVR).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
				t.Errorf("creating %s: %v", u.GetName(), err)
				failed.Store(true)
			}
		})
	}
	wg.Wait()
	if failed.Load() {
		t.FailNow()
	}
}

// buildChaos builds the chaos operator (e2e/operators/chaos).
func buildChaos(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "operator")
	build := exec.Command("go", "build", "-o", bin, "./e2e/operators/chaos/cmd")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestShardingUnderGeneratedRBAC: replicas with --shards run as a service
// account with only what `kopfgo rbac --shards` grants: they share the
// shards, handle the objects, and one stopped releases its Leases and
// leaves (delete), its shards going to the other, with no 403 anywhere.
func TestShardingUnderGeneratedRBAC(t *testing.T) {
	ns := namespace(t)
	bin := buildChaos(t)
	kubeconfig, k := serviceAccountKubeconfig(t, ns, "operator")
	manifest := kopfgoRBAC(t, "./e2e/operators/chaos", "--name", "kopfgo-e2e-"+ns, "--service-account", "operator",
		"--service-account-namespace", ns, "--shards", "--shards-namespace", ns)
	applyRBAC(t, docs(t, manifest))
	for _, verb := range []string{"get", "list", "create", "update", "delete"} {
		waitAllowed(t, k, ns, "coordination.k8s.io", verb, "leases")
	}
	waitAllowed(t, k, ns, "kopf.dev", "patch", "kopfexamples/status")
	start := func(pod string) *runner.Process {
		return startBinary(t, bin, []string{"KOPFGO_CHAOS_NO_TIMER=1", "POD_NAME=" + pod}, "-n", ns, "--kubeconfig", kubeconfig,
			"--shards", "4", "--shards-name", "rbac", "--shards-namespace", ns,
			"--shards-lease-duration", "6s", "--shards-renew-deadline", "4s", "--shards-retry-period", "1s")
	}
	a, b := start("replica-a"), start("replica-b")
	waitLog(t, a, "Acquired shard", 1)
	waitLog(t, b, "Acquired shard", 1)
	for i := 0; i < 10; i++ {
		obj := objYAML(t)
		obj["metadata"].(map[string]any)["name"] = fmt.Sprintf("kex-%02d", i)
		createKex(t, ns, obj)
	}
	for i := 0; i < 10; i++ {
		waitKex(t, ns, fmt.Sprintf("kex-%02d", i), "the creation handled", handled)
	}
	if err := b.Stop(30 * time.Second); err != nil {
		t.Errorf("stopping a replica: %v", err)
	}
	waitLog(t, b, "on exit.", 1)
	eventually(t, time.Minute, "the other replica to take every shard", func() (bool, error) {
		list, err := kube(t).CoordinationV1().Leases(ns).List(context.Background(), metav1.ListOptions{LabelSelector: modes.ShardingLabel + "=rbac"})
		if err != nil {
			return false, err
		}
		held, members := 0, 0
		for _, l := range list.Items {
			switch {
			case strings.Contains(l.Name, "-member-"):
				members++
			case l.Spec.HolderIdentity != nil && strings.HasPrefix(*l.Spec.HolderIdentity, "replica-a_"):
				held++
			}
		}
		return held == 4 && members == 1, fmt.Errorf("replica-a holds %d shards; %d membership leases", held, members)
	})
	for _, p := range []*runner.Process{a, b} {
		for _, l := range p.Lines() {
			if strings.Contains(strings.ToLower(l), "forbidden") {
				t.Errorf("a 403 with the generated role: %s", l)
			}
		}
	}
}

// journalKill records in the chaos journal that a process was killed: its
// daemons stopped then.
func journalKill(t *testing.T, journal string, pid int) {
	t.Helper()
	f, err := os.OpenFile(journal, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "kill - - - %d\n", pid); err != nil {
		t.Fatal(err)
	}
}

// daemonsRunning replays the journal: the pids each object's daemon runs
// in, sorted, and the overlaps: a daemon starting while another of its
// object runs in another process.
func daemonsRunning(t *testing.T, journal string) (_ map[string][]string, overlaps []string) {
	t.Helper()
	running := map[string]map[string]bool{}
	for _, f := range journalLines(t, journal) {
		obj, pid := f[2], f[4]
		switch {
		case f[0] == "kill":
			for _, pids := range running {
				delete(pids, pid)
			}
		case f[1] != "daemon":
		case f[0] == "inv":
			if running[obj] == nil {
				running[obj] = map[string]bool{}
			}
			for other := range running[obj] {
				if other != pid {
					overlaps = append(overlaps, fmt.Sprintf("%s's daemon started in pid %s while it ran in pid %s", obj, pid, other))
				}
			}
			running[obj][pid] = true
		case f[0] == "ret":
			delete(running[obj], pid)
		}
	}
	out := map[string][]string{}
	for obj, pids := range running {
		for pid := range pids {
			out[obj] = append(out[obj], pid)
		}
		sort.Strings(out[obj])
	}
	return out, overlaps
}
