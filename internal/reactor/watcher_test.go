package reactor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/indexing"
)

func (s *scenario) onEvent(id string, fn handlers.EventFunc, configure func(*handling.Handler)) {
	poking := func(ctx context.Context, e *handlers.WatchEvent) (any, error) {
		defer s.poke() // what it changed is news
		return fn(ctx, e)
	}
	s.reg.AddEvent(handling.EventRegistration{Resource: "kopfexamples", Fn: poking, Configure: func(h *handling.Handler) {
		h.ID = id
		if configure != nil {
			configure(h)
		}
	}})
}

func (s *scenario) delete(name string) {
	if err := s.dyn.Resource(kexGVR).Namespace("default").Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

func (s *scenario) createPod(name string, labels map[string]any) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "namespace": "default", "uid": "uid-" + name, "labels": labels},
	}}
	if _, err := s.dyn.Resource(podGVR).Namespace("default").Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

// observed records what watching handlers saw, per object.
type observed struct {
	mu   sync.Mutex
	seen map[string][]string
}

func (e *observed) add(name, what string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seen == nil {
		e.seen = map[string][]string{}
	}
	e.seen[name] = append(e.seen[name], what)
}

func (e *observed) of(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.seen[name], ",")
}

// types is what of returns with repeats dropped: the fake API writes twice
// (once as the fake does, then with a resourceVersion), so every change
// comes as an event and an extra MODIFIED.
func (e *observed) types(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, t := range e.seen[name] {
		if len(out) > 0 && (out[len(out)-1] == t || t == "MODIFIED" && out[len(out)-1] == "ADDED") {
			continue
		}
		out = append(out, t)
	}
	return strings.Join(out, ",")
}

func (e *observed) count(name string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.seen[name])
}

func TestEventHandlersSeeEveryEventAndStoreNothing(t *testing.T) {
	s := newScenario(t)
	var seen observed
	s.onEvent("event_fn", func(ctx context.Context, e *handlers.WatchEvent) (any, error) {
		typ := string(e.Type)
		if typ == "" {
			typ = "listed"
		}
		if e.Raw["type"] != nil && e.Raw["type"] != string(e.Type) || e.Raw["object"] == nil {
			t.Errorf("raw event = %v", e.Raw)
		}
		seen.add(e.Name, typ)
		return nil, nil
	}, nil)
	s.onEvent("failing_fn", func(ctx context.Context, e *handlers.WatchEvent) (any, error) {
		return nil, errors.New("oops")
	}, nil)
	s.create("kex1", map[string]any{"field": "a"})
	s.start()
	s.waitWatching()
	s.until("the listing", func() bool { return seen.types("kex1") == "listed" })
	s.create("kex2", nil)
	s.until("kex2 added", func() bool { return seen.types("kex2") == "ADDED" })
	s.update("kex1", func(u *unstructured.Unstructured) { u.Object["spec"] = map[string]any{"field": "b"} })
	s.delete("kex2")
	s.until("all events", func() bool { return seen.types("kex1") == "listed,MODIFIED" && seen.types("kex2") == "ADDED,DELETED" })
	// Errors are logged and ignored, on every event; nothing is ever stored
	// (compat: handlers-event).
	s.until("errors logged", func() bool {
		return strings.Count(s.log.String(), "Handler 'failing_fn' failed with an exception and will ignore it: oops") == seen.count("kex1")+seen.count("kex2")
	})
	for k := range s.get("kex1").GetAnnotations() {
		t.Errorf("annotation %s on an object of watching handlers only", k)
	}
}

func TestEventHandlerResultsAreStoredAndFiltersApply(t *testing.T) {
	s := newScenario(t)
	var seen observed
	s.onEvent("labelled", func(ctx context.Context, e *handlers.WatchEvent) (any, error) {
		seen.add(e.Name, string(e.Type))
		if e.Status["labelled"] != nil {
			// The fake API makes a new version even of a patch that changes
			// nothing (a real API server does not): stop the ping-pong.
			return nil, nil
		}
		return map[string]any{"seen": true}, nil
	}, func(h *handling.Handler) {
		h.Filters.AddLabels(map[string]any{"watch": "yes"})
	})
	var all observed
	s.onEvent("all", func(ctx context.Context, e *handlers.WatchEvent) (any, error) {
		all.add(e.Name, "seen")
		return nil, nil
	}, nil)
	s.create("other", nil)
	s.create("kex1", nil)
	s.start()
	s.waitWatching()
	s.until("the listing", func() bool { return all.of("other") != "" && all.of("kex1") != "" })
	s.update("kex1", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"watch": "yes"}) })
	s.until("the result in status", func() bool { return s.get("kex1").Object["status"] != nil })
	if got := s.get("kex1").Object["status"]; fmt.Sprint(got) != "map[labelled:map[seen:true]]" {
		t.Errorf("status = %v", got)
	}
	if seen.of("other") != "" || !strings.HasPrefix(seen.of("kex1"), "MODIFIED") {
		t.Errorf("seen other=%q kex1=%q; want only kex1 once labelled", seen.of("other"), seen.of("kex1"))
	}
}

func TestIndicesArePopulatedBeforeAnyHandler(t *testing.T) {
	s := newScenario(t)
	blocked, release := make(chan struct{}), make(chan struct{})
	ix, runner, err := indexing.Register(&handling.Registry{}, "pods", func(ctx context.Context, o *handlers.Object) (map[string]string, error) {
		if o.Name == "pod-19" {
			close(blocked)
			<-release
		}
		return map[string]string{o.Labels["parent"]: o.Name}, nil
	}, func(h *handling.Handler) { h.ID = "by_parent" })
	if err != nil {
		t.Fatal(err)
	}
	s.indexers = append(s.indexers, runner)
	var (
		mu        sync.Mutex
		sawInEvt  = -1
		sawInCrea = -1
		early     bool // a handler ran while the indexer was held
	)
	held := func() bool {
		select {
		case <-release:
			return false
		default:
			return true
		}
	}
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		early = early || held()
		sawInCrea = len(ix.Get("kex1"))
		return nil, nil
	})
	s.onEvent("event_fn", func(ctx context.Context, e *handlers.WatchEvent) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		early = early || held()
		if sawInEvt < 0 {
			sawInEvt = len(ix.Get("kex1"))
		}
		return nil, nil
	}, nil)
	for i := range 20 {
		s.createPod(fmt.Sprintf("pod-%d", i), map[string]any{"parent": "kex1"})
	}
	s.create("kex1", nil)
	s.start()
	s.waitWatching()
	<-blocked
	// The KopfExamples are listed and watched, the pods' indexer is held: an
	// operator without the guarantee runs the handlers now, and they see the
	// indexer held. (Without a wait, that is likely rather than certain; the
	// counts below are checked either way.)
	close(release)
	s.until("the create handler", func() bool { mu.Lock(); defer mu.Unlock(); return sawInCrea >= 0 })
	mu.Lock()
	defer mu.Unlock()
	if early {
		t.Errorf("a handler ran before the indices were populated")
	}
	if sawInCrea != 20 || sawInEvt != 20 {
		t.Errorf("handlers saw %d (create) and %d (event) pods in the index, want 20 (compat: indices-complete)", sawInCrea, sawInEvt)
	}
}

func TestStealthModeTurnsALateMatchIntoACreation(t *testing.T) {
	s := newScenario(t)
	var seen observed
	labelled := func(h *handling.Handler) { h.Filters.AddLabels(map[string]any{"app": "x"}) }
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		seen.add(c.Name, string(c.Reason))
		return nil, nil
	}, labelled)
	s.on(causes.Update, "update_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		seen.add(c.Name, string(c.Reason))
		return nil, nil
	}, labelled)
	s.start()
	s.waitWatching()
	s.create("kex1", map[string]any{"field": "a"})
	s.update("kex1", func(u *unstructured.Unstructured) { u.Object["spec"] = map[string]any{"field": "b"} })
	s.create("kex2", nil)
	s.update("kex2", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"app": "x"}) })
	s.until("kex2 handled", func() bool { return seen.of("kex2") == "create" })
	if anns := s.get("kex1").GetAnnotations(); len(anns) != 0 {
		t.Errorf("annotations on an object out of scope: %v", anns)
	}
	if strings.Contains(s.log.String(), "[default/kex1]") {
		t.Errorf("an object out of scope is logged about:\n%s", s.log)
	}
	// Labelled later: a creation, not an update (compat: filters-stealth).
	s.update("kex1", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"app": "x"}) })
	s.until("kex1 handled", func() bool { return seen.of("kex1") != "" })
	if got := seen.of("kex1"); got != "create" {
		t.Errorf("kex1 handled as %q, want create", got)
	}
}

func TestFinalizerGoesOnlyOnObjectsADeleteHandlerMatches(t *testing.T) {
	s := newScenario(t)
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil })
	s.on(causes.Delete, "delete_fn", func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil },
		func(h *handling.Handler) { h.Filters.AddLabels(map[string]any{"guarded": handlers.Present}) })
	s.start()
	s.waitWatching()
	s.create("plain", nil)
	s.create("guarded", nil)
	s.update("guarded", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"guarded": ""}) })
	s.until("the guarded one's finalizer", func() bool { return causes.HasFinalizer(s.get("guarded").Object, config.DefaultFinalizer) })
	s.until("both handled", func() bool {
		_, a := annotation(s.get("plain"), "kopf.zalando.org/last-handled-configuration")
		_, b := annotation(s.get("guarded"), "kopf.zalando.org/last-handled-configuration")
		return a && b
	})
	if causes.HasFinalizer(s.get("plain").Object, config.DefaultFinalizer) {
		t.Errorf("the finalizer is on an object no delete handler matches")
	}
	// Losing the label releases the object.
	s.update("guarded", func(u *unstructured.Unstructured) { u.SetLabels(nil) })
	s.until("the finalizer removed", func() bool { return !causes.HasFinalizer(s.get("guarded").Object, config.DefaultFinalizer) })
}

func TestMemosArePerObjectAndSeededByTheOperator(t *testing.T) {
	s := newScenario(t)
	type shared struct {
		mu    sync.Mutex
		names []string
	}
	global := &shared{}
	s.memo = &handlers.Memo{}
	s.memo.Store("shared", global)
	var counts, types observed
	s.onEvent("count", func(ctx context.Context, e *handlers.WatchEvent) (any, error) {
		n, _ := e.Memo.Load("n")
		next := 1
		if n != nil {
			next = n.(int) + 1
		}
		e.Memo.Store("n", next)
		counts.add(e.Name, fmt.Sprint(next))
		types.add(e.Name, string(e.Type))
		g, _ := e.Memo.Load("shared")
		g.(*shared).mu.Lock()
		g.(*shared).names = append(g.(*shared).names, e.Name)
		g.(*shared).mu.Unlock()
		return nil, nil
	}, nil)
	s.start()
	s.waitWatching()
	s.create("kex1", nil)
	s.create("kex2", nil)
	s.until("both added", func() bool { return types.types("kex1") == "ADDED" && types.types("kex2") == "ADDED" })
	s.update("kex1", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"a": "b"}) })
	// Deleted and created again: a new object, a new memo (compat: memos-object).
	s.delete("kex1")
	s.until("the deletion", func() bool { return strings.HasSuffix(types.types("kex1"), "DELETED") })
	before := counts.count("kex1")
	s.create("kex1", nil)
	s.until("the new kex1", func() bool { return counts.count("kex1") > before })
	all := strings.Split(counts.of("kex1"), ",")
	for i, n := range all[:before] {
		if n != fmt.Sprint(i+1) {
			t.Errorf("kex1's counts = %v, want 1, 2, 3... while it exists", all)
		}
	}
	if all[before] != "1" {
		t.Errorf("the re-created kex1 counts from %s, want 1: a new object has a new memo", all[before])
	}
	s.until("every event in the shared value", func() bool {
		global.mu.Lock()
		defer global.mu.Unlock()
		return len(global.names) == counts.count("kex1")+counts.count("kex2")
	})
}

func TestFinalizerLeftByAnEarlierOperatorIsReleased(t *testing.T) {
	// An operator with watching handlers only meets an object that an earlier
	// version of it guarded with its finalizer: nothing needs it any more.
	s := newScenario(t)
	var seen observed
	s.onEvent("event_fn", func(ctx context.Context, e *handlers.WatchEvent) (any, error) {
		seen.add(e.Name, string(e.Type))
		return nil, nil
	}, nil)
	s.create("kex1", nil)
	s.update("kex1", func(u *unstructured.Unstructured) { u.SetFinalizers([]string{config.DefaultFinalizer, "other/keep"}) })
	s.start()
	s.waitWatching()
	s.until("the finalizer removed", func() bool {
		fins := s.get("kex1").GetFinalizers()
		return len(fins) == 1 && fins[0] == "other/keep"
	})
}

func TestHandlersSeeManagedFieldsOnlyWhenKept(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("KeepManagedFields=%v", keep), func(t *testing.T) {
			s := newScenario(t)
			s.settings.Watching.KeepManagedFields = keep
			seen := make(chan string, 2)
			s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
				_, has := c.Meta["managedFields"]
				seen <- fmt.Sprintf("%s:%v", c.Name, has)
				return nil, nil
			})
			create := func(name string) {
				u := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
					"metadata": map[string]any{"name": name, "namespace": "default", "uid": "uid-" + name,
						"managedFields": []any{map[string]any{"manager": "kubectl", "operation": "Update"}}},
					"spec": map[string]any{"field": "value"},
				}}
				if _, err := s.dyn.Resource(kexGVR).Namespace("default").Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			create("listed")
			s.start()
			s.waitWatching()
			create("watched")
			got := map[string]bool{}
			for range 2 {
				select {
				case v := <-seen:
					got[v] = true
				case <-time.After(10 * time.Second):
					t.Fatalf("the handler saw only %v", got)
				}
			}
			for _, name := range []string{"listed", "watched"} {
				if want := fmt.Sprintf("%s:%v", name, keep); !got[want] {
					t.Errorf("the handler saw %v, want %s", got, want)
				}
			}
		})
	}
}

// A change made between the watcher's listing and its watch comes to it
// by the watch, replayed from the listing's resourceVersion; when the API
// has forgotten the events since (a compaction: the watch is answered 410
// Expired), the watcher lists again and finds the change there.
func TestAChangeBetweenTheListingAndTheWatchIsHandled(t *testing.T) {
	for _, forgotten := range []bool{false, true} {
		t.Run(fmt.Sprintf("forgotten=%v", forgotten), func(t *testing.T) {
			s := newScenario(t)
			updates, saw := s.handledWithUpdates("a")
			var once sync.Once
			s.beforeWatch = func() {
				once.Do(func() {
					ri := s.dyn.Resource(kexGVR).Namespace("default")
					u, err := ri.Get(context.Background(), "kex1", metav1.GetOptions{})
					if err == nil {
						u.Object["spec"] = map[string]any{"field": "b"}
						_, err = ri.Update(context.Background(), u, metav1.UpdateOptions{})
					}
					if err != nil {
						t.Errorf("the change between the listing and the watch: %v", err)
					}
					if forgotten {
						s.api.Forget(kexGVR)
					}
				})
			}
			s.start()
			s.until("the change handled", func() bool { return updates.get("kex1") == 1 })
			if got := saw.Load(); got != "b" {
				t.Errorf("the update handler saw %v, want b", got)
			}
			lists := 0
			for _, a := range s.dyn.Actions() {
				if a.GetVerb() == "list" && a.GetResource() == kexGVR {
					lists++
				}
			}
			if want := map[bool]int{false: 1, true: 2}[forgotten]; lists != want {
				t.Errorf("%d lists of the KopfExamples, want %d", lists, want)
			}
		})
	}
}
