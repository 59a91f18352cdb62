package handling

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/patch"
	"github.com/kopfgo/kopfgo/persistence"
)

// untilDone runs passes, stepping the fake clock over delays, until the
// cause is done; it fails the test after max passes. It records the delays.
func (w *world) untilDone(max int, hs ...*Handler) Outcome {
	w.t.Helper()
	w.delays = nil
	for i := 0; i < max; i++ {
		out, _ := w.pass(hs...)
		if out.Done {
			return out
		}
		w.delays = append(w.delays, out.Delay)
		w.clock.Step(out.Delay)
	}
	w.t.Fatalf("not done after %d passes; log:\n%s", max, w.logs)
	return Outcome{}
}

func (w *world) annotations() map[string]any {
	return dicts.Map(w.body, "metadata", "annotations")
}

func failUntil(retry int, delay time.Duration) handlers.ChangeFunc {
	return func(ctx context.Context, c *handlers.Change) (any, error) {
		if c.Retry < retry {
			return nil, &handlers.TemporaryError{Err: errors.New("not yet"), Delay: delay}
		}
		return nil, nil
	}
}

func TestFailingSubhandlerDoesNotRerunItsSucceededSiblings(t *testing.T) {
	w := newWorld(t)
	calls := map[string]int{}
	count := func(id string, fn handlers.ChangeFunc) handlers.ChangeFunc {
		return func(ctx context.Context, c *handlers.Change) (any, error) {
			calls[id]++
			return fn(ctx, c)
		}
	}
	var midCycle map[string]any
	parent := w.handler("create_fn", func(c *handlers.Change) (any, error) { return nil, nil })
	parent.Fn = func(ctx context.Context, c *handlers.Change) (any, error) {
		calls["parent"]++
		err := Execute(ctx, map[string]handlers.ChangeFunc{
			"a": count("a", failUntil(2, time.Second)),
			"b": count("b", func(ctx context.Context, c *handlers.Change) (any, error) { return map[string]any{"ok": 1}, nil }),
			"c": count("c", func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil }),
		})
		if err != nil {
			midCycle = dicts.DeepCopyMap(w.annotations())
			return nil, err
		}
		return map[string]any{fmt.Sprintf("call-%d", calls["parent"]): true}, nil
	}
	out := w.untilDone(10, parent)

	// Pending children are no failure of the parent: it is due again as
	// soon as a child is, not after a backoff.
	if want := []time.Duration{0, 0, time.Second, time.Second}; !slices.Equal(w.delays, want) {
		t.Errorf("delays between passes = %v, want %v", w.delays, want)
	}
	if strings.Contains(w.logs.String(), "Handler 'create_fn' failed") {
		t.Errorf("the parent is logged as failed:\n%s", w.logs)
	}
	if calls["a"] != 3 || calls["b"] != 1 || calls["c"] != 1 {
		t.Errorf("children called a=%d b=%d c=%d times, want 3, 1, 1 (compat: handlers-subhandlers)", calls["a"], calls["b"], calls["c"])
	}
	// One child per invocation of the parent, until the last one succeeds.
	if calls["parent"] != 5 || out.Succeeded != 1 {
		t.Errorf("parent called %d times with outcome %+v, want 5 and one success", calls["parent"], out)
	}
	// The parent's result is delivered once, on its last invocation.
	if got := dicts.Map(w.body, "status", "create_fn"); len(got) != 1 || got["call-5"] != true {
		t.Errorf("status.create_fn = %v, want the last invocation's result only", got)
	}
	if got := dicts.Map(w.body, "status", "create_fn/b"); got["ok"] == nil {
		t.Errorf("status[create_fn/b] = %v, want the child's result", got)
	}
	var rec persistence.Record
	if raw, ok := midCycle["kopf.zalando.org/create_fn"].(string); !ok || rec.UnmarshalJSON([]byte(raw)) != nil ||
		!slices.Equal(rec.Subrefs, []string{"create_fn/a", "create_fn/b", "create_fn/c"}) {
		t.Errorf("the parent's record mid-cycle = %v, want subrefs of its children", midCycle["kopf.zalando.org/create_fn"])
	}
	for _, key := range []string{"kopf.zalando.org/create_fn.a", "kopf.zalando.org/create_fn.b"} {
		if _, ok := midCycle[key]; !ok {
			t.Errorf("no %s mid-cycle; annotations: %v", key, midCycle)
		}
	}
	for k := range w.annotations() {
		if strings.HasPrefix(k, "kopf.zalando.org/create_fn") {
			t.Errorf("record %s left after the cycle", k)
		}
	}
}

func TestIdempotenceExampleOfTheManual(t *testing.T) {
	// (compat: handlers-subhandlers): create_a succeeds on its 3rd attempt,
	// create_b on its 7th; the parent enters once per child attempt and leaves
	// once. (The manual says "~7" entries: it runs the children in parallel
	// delays.)
	w := newWorld(t)
	calls := map[string]int{}
	parent := w.handler("create", nil)
	parent.Fn = func(ctx context.Context, c *handlers.Change) (any, error) {
		calls["enter"]++
		err := Execute(ctx, map[string]handlers.ChangeFunc{
			"a": func(ctx context.Context, c *handlers.Change) (any, error) {
				calls["a"]++
				return failUntil(2, time.Second)(ctx, c)
			},
			"b": func(ctx context.Context, c *handlers.Change) (any, error) {
				calls["b"]++
				return failUntil(6, time.Second)(ctx, c)
			},
		})
		if err != nil {
			return nil, err
		}
		calls["leave"]++
		return nil, nil
	}
	w.untilDone(20, parent)
	if calls["a"] != 3 || calls["b"] != 7 || calls["leave"] != 1 || calls["enter"] != calls["a"]+calls["b"] {
		t.Errorf("calls = %v, want a=3 b=7 leave=1 enter=a+b", calls)
	}
}

func TestRegisteredSubhandlersRunAfterTheParent(t *testing.T) {
	// (compat: handlers-subhandlers): task_def fails once; task_abc runs once in total.
	w := newWorld(t)
	w.body["spec"] = map[string]any{"tasks": []any{"abc", "def"}}
	calls := map[string]int{}
	var midCycle map[string]any
	parent := w.handler("create", nil)
	parent.Fn = func(ctx context.Context, c *handlers.Change) (any, error) {
		if calls["task_def"] == 1 {
			midCycle = dicts.DeepCopyMap(w.annotations())
		}
		for _, task := range c.Spec["tasks"].([]any) {
			id := "task_" + task.(string)
			err := Register(ctx, func(ctx context.Context, c *handlers.Change) (any, error) {
				calls[id]++
				if id == "task_def" && c.Retry == 0 {
					return nil, &handlers.TemporaryError{Err: errors.New("once"), Delay: 2 * time.Second}
				}
				return nil, nil
			}, func(h *Handler) { h.ID = id })
			if err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	w.untilDone(10, parent)
	if calls["task_abc"] != 1 || calls["task_def"] != 2 {
		t.Errorf("calls = %v, want task_abc once, task_def twice", calls)
	}
	for _, key := range []string{"kopf.zalando.org/create.task_abc", "kopf.zalando.org/create.task_def"} {
		if _, ok := midCycle[key]; !ok {
			t.Errorf("no %s mid-cycle; annotations: %v", key, midCycle)
		}
		if _, ok := w.annotations()[key]; ok {
			t.Errorf("%s left after the cycle", key)
		}
	}
}

func TestNestedSubhandlersArePurgedAtEveryLevel(t *testing.T) {
	w := newWorld(t)
	calls := map[string]int{}
	leaf := func(id string) handlers.ChangeFunc {
		return func(ctx context.Context, c *handlers.Change) (any, error) { calls[id]++; return nil, nil }
	}
	parent := w.handler("create", nil)
	parent.Fn = func(ctx context.Context, c *handlers.Change) (any, error) {
		return nil, Execute(ctx, map[string]handlers.ChangeFunc{
			"x": func(ctx context.Context, c *handlers.Change) (any, error) {
				return nil, Execute(ctx, map[string]handlers.ChangeFunc{"y": leaf("y"), "z": leaf("z")})
			},
		})
	}
	var refs []string
	for i := 0; i < 10; i++ {
		out, _ := w.pass(parent)
		if rec := w.record("create"); rec != nil {
			refs = rec.Subrefs
		}
		if out.Done {
			break
		}
		w.clock.Step(out.Delay)
	}
	if calls["y"] != 1 || calls["z"] != 1 {
		t.Errorf("calls = %v, want y and z once", calls)
	}
	if want := []string{"create/x", "create/x/y", "create/x/z"}; !slices.Equal(refs, want) {
		t.Errorf("subrefs = %v, want %v (all levels)", refs, want)
	}
	for k := range w.annotations() {
		if strings.HasPrefix(k, "kopf.zalando.org/create") {
			t.Errorf("record %s left after the cycle", k)
		}
	}
}

func TestSubhandlersSeeTheParentsFieldChange(t *testing.T) {
	w := newWorld(t)
	var seen *handlers.Change
	parent := w.handler("fn", nil, func(h *Handler) { h.Field = []string{"spec", "field"} })
	parent.Fn = func(ctx context.Context, c *handlers.Change) (any, error) {
		return nil, Execute(ctx, map[string]handlers.ChangeFunc{"child": func(ctx context.Context, c *handlers.Change) (any, error) {
			seen = c
			return nil, nil
		}})
	}
	c := &Cycle{
		Reason: "update", Handlers: []*Handler{parent}, Body: w.body, Patch: &patch.Patch{},
		Old: map[string]any{"spec": map[string]any{"field": "a"}}, New: map[string]any{"spec": map[string]any{"field": "b"}},
		Storage: persistence.NewAnnotationsStorage(), Clock: w.clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	c.Diff = diffbase.Compute(c.Old, c.New)
	c.Run(context.Background())
	if seen == nil || seen.Old != "a" || seen.New != "b" || len(seen.Diff) != 1 || len(seen.Diff[0].Path) != 0 {
		t.Fatalf("the child saw %+v, want the parent's field change", seen)
	}
}

func TestSubhandlerDeclarationErrors(t *testing.T) {
	if err := Execute(context.Background(), map[string]handlers.ChangeFunc{"a": namedFn}); !errors.Is(err, handlers.ErrNoParentHandler) {
		t.Errorf("Execute outside a handler: err = %v, want ErrNoParentHandler", err)
	}
	if err := Register(context.Background(), namedFn, nil); !errors.Is(err, handlers.ErrNoParentHandler) {
		t.Errorf("Register outside a handler: err = %v, want ErrNoParentHandler", err)
	}
	w := newWorld(t)
	var errs []string
	parent := w.handler("create_fn", nil)
	parent.Fn = func(ctx context.Context, c *handlers.Change) (any, error) {
		for _, reg := range []struct {
			fn        handlers.ChangeFunc
			configure func(*Handler)
		}{
			{func(ctx context.Context, c *handlers.Change) (any, error) { return nil, nil }, nil},
			{namedFn, func(h *Handler) { h.Filters.SetField("spec.field"); h.Filters.SetOld("x") }},
			{namedFn, nil},
			{namedFn, nil},
		} {
			if err := Register(ctx, reg.fn, reg.configure); err != nil {
				errs = append(errs, err.Error())
			}
		}
		return nil, nil
	}
	w.pass(parent)
	want := []string{"give it kopfgo.ID", "only be used in update and field handlers", `duplicate id "create_fn/namedFn"`}
	if len(errs) != len(want) {
		t.Fatalf("errors = %q, want %d", errs, len(want))
	}
	for i, e := range errs {
		if !strings.Contains(e, want[i]) || !strings.Contains(e, `of "create_fn"`) {
			t.Errorf("error %d = %q, want it to mention %q and the parent", i, e, want[i])
		}
	}
}

func TestSubhandlerFilters(t *testing.T) {
	w := newWorld(t)
	calls := map[string]int{}
	parent := w.handler("create", nil)
	parent.Fn = func(ctx context.Context, c *handlers.Change) (any, error) {
		for _, id := range []string{"match", "mismatch"} {
			label := map[string]any{"tier": "web"}
			if id == "mismatch" {
				label = map[string]any{"tier": "db"}
			}
			if err := Register(ctx, func(ctx context.Context, c *handlers.Change) (any, error) { calls[id]++; return nil, nil },
				func(h *Handler) { h.ID = id; h.Filters.AddLabels(label) }); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	dicts.Set(w.body, []string{"metadata", "labels"}, map[string]any{"tier": "web"})
	w.untilDone(5, parent)
	if calls["match"] != 1 || calls["mismatch"] != 0 {
		t.Errorf("calls = %v, want the matching child only", calls)
	}
}

func TestParentThatDropsThePendingErrorIsNotFinishedEarly(t *testing.T) {
	w := newWorld(t)
	calls := map[string]int{}
	parent := w.handler("create", nil)
	parent.Fn = func(ctx context.Context, c *handlers.Change) (any, error) {
		calls["parent"]++
		_ = Execute(ctx, map[string]handlers.ChangeFunc{
			"a": func(ctx context.Context, c *handlers.Change) (any, error) {
				calls["a"]++
				return failUntil(1, time.Second)(ctx, c)
			},
		})
		return map[string]any{"calls": calls["parent"]}, nil
	}
	w.untilDone(5, parent)
	if calls["a"] != 2 || calls["parent"] != 2 {
		t.Errorf("calls = %v, want the parent invoked until its child succeeded", calls)
	}
	if got := dicts.Map(w.body, "status", "create"); got["calls"] != int64(2) && got["calls"] != 2.0 && got["calls"] != 2 {
		t.Errorf("status.create = %v, want the result of the last invocation", got)
	}
}
