package reactor

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/resources"
)

func TestStateBehind(t *testing.T) {
	for _, tc := range []struct {
		name string
		seen []string
		rv   string
		want bool
	}{
		{"nothing seen", nil, "5", false},
		{"the latest", []string{"4", "5"}, "5", false},
		{"an older one", []string{"4", "5"}, "4", true},
		{"one not seen yet", []string{"4", "5"}, "6", true},
		{"the latest after the ring wrapped", []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}, "10", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &state{}
			for _, rv := range tc.seen {
				m.saw(rv)
			}
			if got := m.behind(tc.rv); got != tc.want {
				t.Errorf("behind(%q) after %v = %v, want %v", tc.rv, tc.seen, got, tc.want)
			}
		})
	}
}

// A pass that read the store just before the watch delivered a newer
// version (here: the store still holds the object as created, while the
// watch has delivered the operator's own patch, which cleared the
// expectation) must not handle the stale body: that ran creation handlers
// twice.
func TestPassOnAStaleBodyDoesNotRunHandlers(t *testing.T) {
	calls := 0
	reg := &handling.Registry{}
	reg.AddChanging(handling.Registration{Resource: "kopfexamples", Reason: causes.Create,
		Fn:        func(context.Context, *handlers.Change) (any, error) { calls++; return nil, nil },
		Configure: func(h *handling.Handler) { h.ID = "create_fn" }})
	cfg := Config{
		Registry: reg,
		Settings: config.Settings{}.WithDefaults(),
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Clock:    testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	created := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{"name": "kex1", "namespace": "default", "uid": "u1", "resourceVersion": "7"},
		"spec":     map[string]any{"field": "value"},
	}}
	compact, err := kube.CompactOf(created, true) // as the watcher's store holds it
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Add(compact); err != nil {
		t.Fatal(err)
	}
	w := newWatcher(&run{Config: cfg, client: &kube.Client{Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())}}, resources.Resource{Group: "kopf.dev", Version: "v1", Plural: "kopfexamples", Kind: "KopfExample", Namespaced: true, Preferred: true}, "", resources.Namespaces{}, nil, nil)
	w.store = store
	if len(w.changing) != 1 {
		t.Fatalf("the watcher has %d changing handlers, want 1", len(w.changing))
	}
	st := &state{uid: "u1"}
	st.saw("7")
	st.saw("9") // the operator's own patch: its expectation is cleared
	w.states["default/kex1"] = st
	wk := &worker{key: "default/kex1", wake: make(chan struct{}, 1), state: st}

	n := w.process(context.Background(), wk)
	if calls != 0 {
		t.Errorf("the create handler ran %d times on a body older than the watch's latest", calls)
	}
	if n != onNews {
		t.Errorf("process = %+v, want %+v: wait for the newer version's observation", n, onNews)
	}
}

// The versions of the operator's own writes: expected until the watch
// delivers them, unless it has before the write's call returned (or the
// write changed nothing); nothing of it is kept once settled.
func TestStateOwnWrites(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	expecting := func(s *state) string { e, _ := s.expecting(); return e }

	s := &state{}
	s.saw("4")
	s.fly()
	s.land("5", now)
	if got := expecting(s); got != "5" {
		t.Fatalf("after a patch to 5, expecting %q, want 5", got)
	}
	s.saw("5")
	if got := expecting(s); got != "" || s.own != nil {
		t.Fatalf("after the watch delivered 5, expecting %q (own %+v), want nothing", got, s.own)
	}

	s.fly()
	s.saw("6") // delivered before the patch call returned
	s.saw("7") // and someone else's change after it
	s.land("6", now)
	if got := expecting(s); got != "" || s.own != nil {
		t.Fatalf("a patch delivered before its call returned: expecting %q (own %+v), want nothing", got, s.own)
	}

	s.fly()
	s.land("7", now) // a patch that changed nothing: the version seen already
	if got := expecting(s); got != "" || s.own != nil {
		t.Fatalf("a patch that changed nothing: expecting %q (own %+v), want nothing", got, s.own)
	}

	s.fly()
	s.land("", now) // a failed write
	if s.own != nil {
		t.Fatalf("a failed write left %+v", s.own)
	}
}
