package reactor

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kopfgo/kopfgo/causes"
	"github.com/kopfgo/kopfgo/handlers"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/resources"
)

func TestMemoryBehind(t *testing.T) {
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
			m := &memory{}
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
	reg := &handlers.Registry{}
	reg.AddChanging(handlers.Registration{Resource: "kopfexamples", Reason: causes.Create,
		Fn:        func(context.Context, *handlers.Change) (any, error) { calls++; return nil, nil },
		Configure: func(h *handlers.Handler) { h.ID = "create_fn" }})
	cfg := Config{
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
	if err := store.Add(created); err != nil {
		t.Fatal(err)
	}
	p := newProcessor(cfg, nil, resources.Resource{Plural: "kopfexamples", Namespaced: true}, reg.Changing(), store)
	mem := &memory{uid: "u1"}
	mem.saw("7")
	mem.saw("9") // the operator's own patch: its expectation is cleared
	p.mems["default/kex1"] = mem
	s := &slot{key: "default/kex1", wake: make(chan struct{}, 1), mem: mem}

	wait, touch := p.process(context.Background(), s)
	if calls != 0 {
		t.Errorf("the create handler ran %d times on a body older than the watch's latest", calls)
	}
	if wait != -1 || touch {
		t.Errorf("process = (%v, %v), want (-1, false): wait for the newer version's notification", wait, touch)
	}
}
