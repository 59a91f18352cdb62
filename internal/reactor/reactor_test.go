package reactor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/indexing"
	"github.com/kopfgo/kopfgo/internal/kube/kubefake"
	"github.com/kopfgo/kopfgo/internal/logging"
	"github.com/kopfgo/kopfgo/internal/replicas"
	"github.com/kopfgo/kopfgo/internal/testlog"
	"github.com/kopfgo/kopfgo/internal/tracing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	kexGVR = schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfexamples"}
	podGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// scenario runs the reactor over fake API clients and a fake clock: the
// script creates and changes objects, steps the clock, and checks what the
// handlers saw and what the operator wrote.
type scenario struct {
	t        testing.TB
	dyn      *dynamicfake.FakeDynamicClient
	clock    *testingclock.FakeClock
	reg      *handling.Registry
	settings config.Settings
	sleeps   atomic.Int32 // settled touch-sleeps entered
	log      *testlog.Buffer
	cancel   context.CancelFunc
	done     chan error
	// indexers and memo go to the reactor's Config (watcher_test.go).
	indexers []indexing.Indexer
	memo     *handlers.Memo
	pause    *replicas.Standby
	shards   *replicas.Serving // Config.Shards (sharding)
	hooks    Hooks             // Config.Hooks
	tracer   *tracing.Tracer   // Config.Tracer
	// statusSubresource makes the status of KopfExamples a subresource, so
	// that the operator writes it with a patch of its own.
	statusSubresource bool
	// api is the fake API server over dyn, which the operator's client
	// lists, watches and patches through.
	api *kubefake.API
	// watching is closed once the operator asks to watch the KopfExamples:
	// it has listed them, so what is written from then on comes to it by
	// its watch (tests that tell listed objects from watched ones wait for
	// it). watchFilter, if set, decides which events the watches deliver.
	watching    chan struct{}
	watchFilter watch.FilterFunc
	// beforeWatch, if set, runs whenever the operator asks to watch the
	// KopfExamples, after its listing and before its watch is served.
	beforeWatch func()
	// news is poked whenever something a script waits for may have
	// changed: a log line, a write to the fake API, a worker's wait.
	news  chan struct{}
	waits atomic.Int32 // the workers' waits begun (Config.onWait)
	// discoveryLags hides the kopf.dev group from discovery until
	// discoveryCaughtUp is set, as an API server just started does.
	discoveryLags     bool
	discoveryCaughtUp atomic.Bool
}

// lateDiscovery is discovery that does not show kopf.dev until it has
// caught up.
type lateDiscovery struct {
	*fakediscovery.FakeDiscovery
	caughtUp *atomic.Bool
}

func (d lateDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	groups, lists, err := d.FakeDiscovery.ServerGroupsAndResources()
	if d.caughtUp.Load() {
		return groups, lists, err
	}
	groups = slices.DeleteFunc(slices.Clone(groups), func(g *metav1.APIGroup) bool { return g.Name == "kopf.dev" })
	lists = slices.DeleteFunc(slices.Clone(lists), func(l *metav1.APIResourceList) bool { return strings.HasPrefix(l.GroupVersion, "kopf.dev/") })
	return groups, lists, err
}

func (s *scenario) poke() {
	select {
	case s.news <- struct{}{}:
	default:
	}
}

func newScenario(t testing.TB) *scenario {
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{
		kexGVR: "KopfExampleList",
		podGVR: "PodList",
		{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}: "CustomResourceDefinitionList",
	})
	s := &scenario{
		t: t, dyn: dyn, reg: &handling.Registry{},
		clock:    testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		watching: make(chan struct{}),
		news:     make(chan struct{}, 1),
	}
	s.log = &testlog.Buffer{OnWrite: s.poke}
	var once sync.Once
	s.api = kubefake.New(dyn, kubefake.Options{
		OnWrite: s.poke,
		OnWatch: func(gvr schema.GroupVersionResource, _ metav1.ListOptions) {
			if gvr == kexGVR {
				if s.beforeWatch != nil {
					s.beforeWatch()
				}
				once.Do(func() { close(s.watching) })
			}
		},
		WatchFilter: func(ev watch.Event) (watch.Event, bool) {
			if s.watchFilter == nil {
				return ev, true
			}
			return s.watchFilter(ev)
		},
	})
	return s
}

// on registers a handler of KopfExamples. What the handler changes is news
// once it returns (a handler that blocks pokes itself).
func (s *scenario) on(reason causes.Reason, id string, fn handlers.ChangeFunc, opts ...func(*handling.Handler)) {
	poking := func(ctx context.Context, c *handlers.Change) (any, error) {
		defer s.poke()
		return fn(ctx, c)
	}
	s.reg.AddChanging(handling.Registration{Resource: "kopfexamples", Reason: reason, Fn: poking, Configure: func(h *handling.Handler) {
		h.ID = id
		for _, o := range opts {
			o(h)
		}
	}})
}

func (s *scenario) start() {
	kexes := []metav1.APIResource{
		{Name: "kopfexamples", SingularName: "kopfexample", Kind: "KopfExample", Namespaced: true, ShortNames: []string{"kex"},
			Verbs: metav1.Verbs{"get", "list", "watch", "patch"}},
	}
	if s.statusSubresource {
		kexes = append(kexes, metav1.APIResource{Name: "kopfexamples/status", Kind: "KopfExample", Namespaced: true,
			Verbs: metav1.Verbs{"get", "patch"}})
	}
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: "kopf.dev/v1",
		APIResources: kexes,
	}, {
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{
			{Name: "pods", SingularName: "pod", Kind: "Pod", Namespaced: true, Verbs: metav1.Verbs{"get", "list", "watch", "patch"}},
		},
	}}}}
	var discovery discovery.DiscoveryInterface = disc
	if s.discoveryLags {
		discovery = lateDiscovery{disc, &s.discoveryCaughtUp}
	}
	client, err := s.api.Client(discovery)
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan error, 1)
	cfg := Config{
		Registry:   s.reg,
		Settings:   s.settings.WithDefaults(),
		Namespaces: []string{"default"},
		Logger:     logging.New(logging.Config{Format: logging.FormatPlain, Level: slog.LevelDebug, Writer: s.log}),
		Clock:      s.clock,
		Client:     client,
		onSleep: func(key string, settled bool) {
			if settled {
				s.sleeps.Add(1)
			}
			s.poke()
		},
		onWait: func() {
			s.waits.Add(1)
			s.poke()
		},
		Indexers: s.indexers,
		Memo:     s.memo,
		Pause:    s.pause,
		Shards:   s.shards,
		Hooks:    s.hooks,
		Tracer:   s.tracer,
	}
	go func() { s.done <- Run(ctx, cfg) }()
	s.t.Cleanup(s.stop)
}

// waitWatching waits until the reactor watches the KopfExamples (or Run
// has returned): it has listed them, so an object created from then on is
// watched, not listed. Nothing else needs it: the fake API, as a real one,
// replays to a watch what was written since its listing.
func (s *scenario) waitWatching() {
	select {
	case <-s.watching:
	case err := <-s.done:
		s.done <- err // Run has returned; leave its error to stop
	case <-time.After(30 * time.Second): // a failure detector
		s.t.Fatalf("the reactor never watched the KopfExamples")
	}
}

func (s *scenario) stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		s.t.Errorf("Run did not return after its context ended")
	}
	if s.t.Failed() {
		s.t.Logf("log:\n%s", s.log)
	}
}

func (s *scenario) create(name string, spec map[string]any) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{"name": name, "namespace": "default", "uid": "uid-" + name},
		"spec":     spec,
	}}
	if _, err := s.dyn.Resource(kexGVR).Namespace("default").Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

func (s *scenario) get(name string) *unstructured.Unstructured {
	u, err := s.dyn.Resource(kexGVR).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return u
}

func (s *scenario) update(name string, mutate func(u *unstructured.Unstructured)) {
	u := s.get(name)
	mutate(u)
	if _, err := s.dyn.Resource(kexGVR).Namespace("default").Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

// until waits for the reactor to reach a state. Processing is asynchronous
// even with a fake clock: observations travel through goroutines. The
// condition is checked again on every piece of news (see scenario.news).
func (s *scenario) until(what string, cond func() bool) {
	s.t.Helper()
	deadline := time.NewTimer(30 * time.Second) // only a failure detector
	defer deadline.Stop()
	for !cond() {
		select {
		case <-s.news:
		case <-deadline.C:
			s.t.Fatalf("never reached: %s\nlog:\n%s", what, s.log)
		}
	}
}

type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) inc(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
	return c.n[k]
}

func (c *counter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

func annotation(u *unstructured.Unstructured, key string) (string, bool) {
	v, ok := u.GetAnnotations()[key]
	return v, ok
}

func TestCreationIsHandledOnceAndRecorded(t *testing.T) {
	s := newScenario(t)
	var calls counter
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		calls.inc(c.Name)
		return map[string]any{"message": "hello"}, nil
	})
	s.create("kex1", map[string]any{"field": "value"}) // listed
	s.start()
	s.until("handled", func() bool {
		_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
		return ok
	})
	u := s.get("kex1")
	if dicts.String(u.Object, "status", "create_fn", "message") != "hello" {
		t.Errorf("status = %v", u.Object["status"])
	}
	raw, _ := annotation(u, "kopf.zalando.org/last-handled-configuration")
	if raw != `{"spec":{"field":"value"}}`+"\n" {
		t.Errorf("diff-base = %q", raw)
	}
	// The operator's own writes are no change: nothing runs again.
	s.until("its own patch seen as no change", func() bool { return strings.Count(s.log.String(), "we are not interested") >= 1 })
	s.update("kex1", func(u *unstructured.Unstructured) { u.Object["status"] = map[string]any{"x": "y"} })
	s.until("noop logged", func() bool { return strings.Count(s.log.String(), "we are not interested") >= 2 })
	if n := calls.get("kex1"); n != 1 {
		t.Errorf("handler called %d times, want 1", n)
	}
}

func TestDelayedHandlerIsWokenByATouchWhenTheClockPasses(t *testing.T) {
	s := newScenario(t)
	var calls counter
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		if calls.inc(c.Name) == 1 {
			return nil, &handlers.TemporaryError{Err: errors.New("later"), Delay: 30 * time.Second}
		}
		return nil, nil
	})
	s.create("kex1", nil)
	s.start()
	s.until("the record with the delay", func() bool {
		raw, _ := annotation(s.get("kex1"), "kopf.zalando.org/create_fn")
		return strings.Contains(raw, `"retries":1`)
	})
	// Once the worker sleeps with its own patch seen, nothing else is due:
	// stepping the clock now must end that sleep with a touch.
	s.until("the worker sleeping", func() bool { return s.sleeps.Load() > 0 })
	if calls.get("kex1") != 1 {
		t.Fatalf("retried before the delay passed")
	}
	s.clock.Step(30 * time.Second)
	s.until("the retry", func() bool { return calls.get("kex1") == 2 })
	s.until("handled", func() bool {
		_, pending := annotation(s.get("kex1"), "kopf.zalando.org/create_fn")
		_, touched := annotation(s.get("kex1"), "kopf.zalando.org/touch-dummy")
		return !pending && !touched
	})
	var touches int
	for _, a := range s.dyn.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && strings.Contains(string(p.GetPatch()), `"kopf.zalando.org/touch-dummy":"2026-`) {
			touches++
		}
	}
	if touches != 1 {
		t.Errorf("%d touch patches, want 1", touches)
	}
}

func TestDeletionRunsDeleteHandlersAndReleasesTheObject(t *testing.T) {
	s := newScenario(t)
	var calls counter
	s.on(causes.Delete, "delete_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		calls.inc(c.Name)
		return nil, nil
	})
	s.create("kex1", nil)
	s.start()
	s.until("the finalizer", func() bool { return causes.HasFinalizer(s.get("kex1").Object, config.DefaultFinalizer) })
	s.until("handled", func() bool {
		_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
		return ok
	})
	// The fake API has no deletion timestamps: mark the object as an API
	// server would on DELETE with a finalizer.
	s.update("kex1", func(u *unstructured.Unstructured) {
		now := metav1.NewTime(s.clock.Now())
		u.SetDeletionTimestamp(&now)
	})
	s.until("the finalizer removed", func() bool { return !causes.HasFinalizer(s.get("kex1").Object, config.DefaultFinalizer) })
	if n := calls.get("kex1"); n != 1 {
		t.Errorf("delete handler called %d times, want 1", n)
	}
}

func TestObjectsAreProcessedInParallelAndEachInOrder(t *testing.T) {
	s := newScenario(t)
	var (
		mu      sync.Mutex
		running = map[string]int{}
		maxObj  int
		maxAll  int
		total   int
		release = make(chan struct{})
	)
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		mu.Lock()
		running[c.Name]++
		total++
		cur := 0
		for _, n := range running {
			cur += n
		}
		maxObj, maxAll = max(maxObj, running[c.Name]), max(maxAll, cur)
		mu.Unlock()
		s.poke()
		<-release
		mu.Lock()
		running[c.Name]--
		mu.Unlock()
		return nil, nil
	})
	for i := range 5 {
		s.create(fmt.Sprintf("kex%d", i), nil)
	}
	s.start()
	s.until("all five handlers running at once", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return maxAll == 5
	})
	// More observations of a busy object must not start a second handler for it.
	s.update("kex0", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"a": "b"}) })
	close(release)
	s.until("all handled", func() bool {
		for i := range 5 {
			if _, ok := annotation(s.get(fmt.Sprintf("kex%d", i)), "kopf.zalando.org/last-handled-configuration"); !ok {
				return false
			}
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	if maxObj != 1 {
		t.Errorf("one object had %d concurrent handlers, want 1", maxObj)
	}
}

func TestUnknownResourceFailsRunNamingTheHandlerWithoutScanning(t *testing.T) {
	s := newScenario(t)
	s.settings.Scanning.Disabled = true
	s.reg.AddChanging(handling.Registration{Resource: "widgets", Reason: causes.Create,
		Fn:        func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil },
		Configure: func(h *handling.Handler) { h.ID = "make_widget" }})
	s.start()
	err := <-s.done
	s.cancel = nil
	if !errors.Is(err, handlers.ErrRegistration) || !strings.Contains(err.Error(), "make_widget") || !strings.Contains(err.Error(), "widgets") {
		t.Fatalf("Run = %v, want a registration error naming make_widget and widgets", err)
	}
}

func TestUnknownResourceIsAWarningWhileScanning(t *testing.T) {
	s := newScenario(t)
	s.reg.AddChanging(handling.Registration{Resource: "widgets", Reason: causes.Create,
		Fn:        func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil },
		Configure: func(h *handling.Handler) { h.ID = "make_widget" }})
	s.start()
	s.until("the warning", func() bool {
		return strings.Contains(s.log.String(), "Unresolved resources cannot be served (try creating their CRDs): widgets for handlers make_widget")
	})
}

// An operator that starts while discovery lags behind the CRDs (an API
// server just started) serves the resource once discovery catches up,
// though no CRD changes: the initial listing of CRDs rescans, and so do
// timers while a CRD defines what discovery does not show yet.
func TestResourceIsServedOnceDiscoveryCatchesUpWithItsCRD(t *testing.T) {
	s := newScenario(t)
	s.discoveryLags = true
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "kopfexamples.kopf.dev"},
		"spec": map[string]any{
			"group": "kopf.dev", "scope": "Namespaced",
			"names":    map[string]any{"plural": "kopfexamples", "singular": "kopfexample", "kind": "KopfExample", "shortNames": []any{"kex"}},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true}},
		},
	}}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := s.dyn.Resource(crdGVR).Create(context.Background(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var calls counter
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		calls.inc(c.Name)
		return nil, nil
	})
	s.create("kex1", map[string]any{"field": "value"})
	s.start()
	s.until("a rescan scheduled", func() bool {
		return strings.Contains(s.log.String(), "Discovery does not show kopfexamples yet, though CRDs define them; scanning again in 1s.")
	})
	s.discoveryCaughtUp.Store(true)
	s.clock.Step(time.Second)
	// Handled and recorded: the handler's call alone would let the test
	// stop the operator before its patch.
	s.until("kex1 handled and recorded", func() bool {
		_, ok := annotation(s.get("kex1"), "kopf.zalando.org/last-handled-configuration")
		return ok
	})
	if n := calls.get("kex1"); n != 1 {
		t.Errorf("create handler calls: %d, want 1", n)
	}
}

// TestKopfLinesOfAnObjectsLife: the debug lines that Kopf writes about an
// object and that its users wait for or search, in Kopf's words and with
// the body and the diff as Python's repr().
func TestKopfLinesOfAnObjectsLife(t *testing.T) {
	s := newScenario(t)
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil })
	s.on(causes.Update, "update_fn", func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil })
	s.create("kex1", map[string]any{"field": "value"})
	s.start()
	const finished = "[default/kex1] Handling cycle is finished, waiting for new changes."
	s.until("the creation settled", func() bool { return s.log.Count(finished) >= 1 })
	for _, line := range []string{
		"[default/kex1] Creation is in progress: {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {",
		"'spec': {'field': 'value'}}",
		"[default/kex1] Handler 'create_fn' is invoked.",
		"[default/kex1] Handler 'create_fn' succeeded.",
		"[default/kex1] Creation is processed: 1 succeeded; 0 failed.",
		"Starting the watch-stream for kopfexamples.v1.kopf.dev in 'default'.",
	} {
		if s.log.Count(line) == 0 {
			t.Errorf("no line with %q", line)
		}
	}
	if n := s.log.Count("Creation diff:"); n != 0 {
		t.Errorf("%d diff lines for a creation, want none (no old state)", n)
	}

	s.update("kex1", func(u *unstructured.Unstructured) { u.Object["spec"] = map[string]any{"field": "other"} })
	s.until("the update processed", func() bool { return s.log.Count("Updating is processed: 1 succeeded; 0 failed.") == 1 })
	if want := "[default/kex1] Updating diff: (('change', ('spec', 'field'), 'value', 'other'),)"; s.log.Count(want) != 1 {
		t.Errorf("no line %q", want)
	}

	if err := s.dyn.Resource(kexGVR).Namespace("default").Delete(context.Background(), "kex1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.until("the goodbye", func() bool { return s.log.Count("[default/kex1] Deleted, really deleted, and we are notified.") == 1 })
}

// TestKopfSleepingLines: a pass whose patch brings the next pass says the
// sleep is skipped; a pass with nothing to patch sleeps for the delayed
// handler; news ends the sleep early, saying how much of it was left.
func TestKopfSleepingLines(t *testing.T) {
	s := newScenario(t)
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) {
		return nil, &handlers.TemporaryError{Err: errors.New("later"), Delay: 30 * time.Second}
	})
	s.create("kex1", nil)
	s.start()
	s.until("the worker sleeping", func() bool { return s.sleeps.Load() > 0 })
	for _, line := range []string{
		"[default/kex1] Sleeping was skipped because of the patch, 30.0 seconds left.",
		"[default/kex1] Sleeping for 30.0 seconds for the delayed handlers.",
	} {
		if s.log.Count(line) == 0 {
			t.Errorf("no line %q", line)
		}
	}
	s.clock.Step(10 * time.Second)
	s.update("kex1", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"a": "b"}) })
	s.until("the interrupted sleep", func() bool {
		return s.log.Count("[default/kex1] Sleeping was interrupted by new changes, 20.0 seconds left.") > 0
	})
	s.until("the sleep for the rest", func() bool {
		return s.log.Count("[default/kex1] Sleeping for 20.0 seconds for the delayed handlers.") > 0
	})
	if n := s.log.Count("Handling cycle is finished"); n != 0 {
		t.Errorf("%d lines saying the cycle is finished while a handler is delayed", n)
	}
}

// TestKopfLineOfAFreeDeletion: an object deleted without the operator's
// finalizer (no delete handler needs it) is one Kopf is done with.
func TestKopfLineOfAFreeDeletion(t *testing.T) {
	s := newScenario(t)
	s.on(causes.Create, "create_fn", func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil })
	s.create("kex1", nil)
	s.start()
	const finished = "[default/kex1] Handling cycle is finished, waiting for new changes."
	s.until("the creation settled", func() bool { return s.log.Count(finished) > 0 })
	s.markDeleted("kex1")
	s.until("the free deletion", func() bool {
		return s.log.Count("[default/kex1] Deletion, but we are done with it, and we do not care.\n"+finished) > 0
	})
}
