package handling

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/patch"
)

// Detect is the read of a pass: these check that it gathers the cause and
// the scope as the reactor's facts need them, from the object alone.
func TestDetectGathersTheCauseAndTheScope(t *testing.T) {
	settings := config.Settings{}.WithDefaults()
	fn := func(context.Context, *handlers.Change) (any, error) { return nil, nil }
	create := &Handler{ID: "create_fn", Reason: causes.Create, Fn: fn}
	del := &Handler{ID: "delete_fn", Reason: causes.Delete, Fn: fn}
	body := func(annotations map[string]any) map[string]any {
		return map[string]any{
			"metadata": map[string]any{"name": "x", "namespace": "ns", "annotations": annotations},
			"spec":     map[string]any{"field": "value"},
		}
	}
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))

	for _, tc := range []struct {
		name     string
		handlers []*Handler
		body     map[string]any
		want     Detection
		warns    bool
	}{
		{"a new object", []*Handler{create}, body(nil), Detection{Reason: causes.Create, InScope: true}, false},
		{"a new object with a delete handler", []*Handler{create, del}, body(nil), Detection{Reason: causes.Create, InScope: true, HandlersRequire: true}, false},
		{"no handler in scope", []*Handler{{ID: "other", Reason: causes.Create, Fn: fn, Filters: Filters{Labels: []MetaCheck{{Key: "app", Check: Check{marker: handlers.Present}}}}}}, body(nil), Detection{Reason: causes.Create}, false},
		{"an unreadable diff-base", []*Handler{create}, body(map[string]any{"kopf.zalando.org/last-handled-configuration": "{not json"}), Detection{Reason: causes.Create, InScope: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs.Reset()
			d := NewDetector(tc.handlers, &settings.Persistence)
			c := &Cause{Body: tc.body, Logger: logger, Handling: settings.Handling}
			if deleting, finalized := d.Marks(tc.body); deleting || finalized {
				t.Errorf("Marks = %v, %v; want false, false", deleting, finalized)
			}
			got := d.Detect(c)
			if got != tc.want {
				t.Errorf("Detect = %+v; want %+v", got, tc.want)
			}
			if c.Reason != tc.want.Reason || c.Old != nil || c.New == nil {
				t.Errorf("the cause: Reason %v, Old %v, New %v; want %v, nil, the essence", c.Reason, c.Old, c.New, tc.want.Reason)
			}
			if warned := strings.Contains(logs.String(), "unreadable last-handled configuration"); warned != tc.warns {
				t.Errorf("warned: %v, want %v; logs:\n%s", warned, tc.warns, logs.String())
			}
		})
	}
}

// Handled stores what Detect found as the new diff-base: the next Detect on
// the patched body finds nothing changed.
func TestHandledStoresTheDiffBaseDetectReadsNext(t *testing.T) {
	settings := config.Settings{}.WithDefaults()
	fn := func(context.Context, *handlers.Change) (any, error) { return nil, nil }
	d := NewDetector([]*Handler{{ID: "create_fn", Reason: causes.Create, Fn: fn}}, &settings.Persistence)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	body := map[string]any{"metadata": map[string]any{"name": "x"}, "spec": map[string]any{"field": "value"}}
	c := &Cause{Body: body, Patch: &patch.Patch{}, Logger: logger}
	d.Detect(c)
	d.Handled(c)
	raw, ok := c.Patch.Meta()["annotations"].(map[string]any)["kopf.zalando.org/last-handled-configuration"]
	if !ok || raw != `{"spec":{"field":"value"}}`+"\n" {
		t.Fatalf("the stored diff-base = %v; want the essence", raw)
	}
	body["metadata"].(map[string]any)["annotations"] = map[string]any{"kopf.zalando.org/last-handled-configuration": raw}
	if got := d.Detect(&Cause{Body: body, Logger: logger}); got.Reason != causes.Noop {
		t.Errorf("after Handled, Detect = %v; want Noop", got.Reason)
	}
}
