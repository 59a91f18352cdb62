//go:build e2e

package e2e

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/cluster"
	"github.com/kopfgo/kopfgo/internal/logging"
)

// recorder keeps which handler saw which object, in order.
type recorder struct {
	mu   sync.Mutex
	seen map[string][]string
}

func (r *recorder) add(handler, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string][]string{}
	}
	r.seen[handler] = append(r.seen[handler], what)
}

func (r *recorder) of(handler string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen[handler]...)
}

func (r *recorder) change(id string) kopfgo.ChangeFunc {
	return func(ctx context.Context, c *kopfgo.Change) (any, error) {
		r.add(id, c.Name)
		return nil, nil
	}
}

// waitHandledWith waits until the object is handled and its diff-base
// contains substr: the change made by the test has been handled.
func waitHandledWith(t *testing.T, ns, name, substr string) *unstructured.Unstructured {
	t.Helper()
	return waitKex(t, ns, name, "handled with "+substr, func(u *unstructured.Unstructured) bool {
		return handled(u) && strings.Contains(u.GetAnnotations()["kopf.zalando.org/last-handled-configuration"], substr)
	})
}

func kexObj(name string, labels, annotations map[string]any, spec map[string]any) map[string]any {
	meta := map[string]any{"name": name}
	if labels != nil {
		meta["labels"] = labels
	}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	return map[string]any{"apiVersion": "kopf.dev/v1", "kind": "KopfExample", "metadata": meta, "spec": spec}
}

// TestFiltersOnEveryHandlerKind registers handlers of every kind with
// every filter, changes three objects, and checks which handler ran for
// which object (compat: filters). The objects:
//
//	a: label f=yes, annotation ann=yes, spec.field=world, spec.when=true
//	b: label f=no, spec.field=hello, spec.nofield=x
//	c: no labels, spec.other=1
func TestFiltersOnEveryHandlerKind(t *testing.T) {
	ns := namespace(t)
	var rec recorder
	const kex = "kopfexamples"
	startsWithY := func(v any) bool { s, ok := v.(string); return ok && strings.HasPrefix(s, "y") }
	log := embedded(t, ns, func(op *kopfgo.Operator) {
		for _, reg := range []struct {
			id   string
			opts []kopfgo.ChangeOption
		}{
			{"c_label_exact", []kopfgo.ChangeOption{kopfgo.Labels{"f": "yes"}}},                         // (compat: filters-labels)
			{"c_label_present", []kopfgo.ChangeOption{kopfgo.Labels{"f": kopfgo.Present}}},              // (compat: filters-markers)
			{"c_label_absent", []kopfgo.ChangeOption{kopfgo.Labels{"f": kopfgo.Absent}}},                // (compat: filters-markers)
			{"c_label_callback", []kopfgo.ChangeOption{kopfgo.Labels{"f": startsWithY}}},                // (compat: filters-callbacks)
			{"c_annotation", []kopfgo.ChangeOption{kopfgo.Annotations{"ann": "yes"}}},                   // (compat: filters-labels)
			{"c_field_value", []kopfgo.ChangeOption{kopfgo.Field("spec.field"), kopfgo.Value("world")}}, // (compat: filters-field)
			{"c_field_absent", []kopfgo.ChangeOption{kopfgo.Field("spec.nofield"), kopfgo.Value(kopfgo.Absent)}},
			{"c_when", []kopfgo.ChangeOption{kopfgo.When(func(o *kopfgo.Object) bool { return o.Spec["when"] == true })}}, // (compat: filters-when)
		} {
			op.On.Create(kex, rec.change(reg.id), append(reg.opts, kopfgo.ID(reg.id))...)
		}
		for _, reg := range []struct {
			id   string
			opts []kopfgo.ChangeOption
		}{
			{"u_label", []kopfgo.ChangeOption{kopfgo.Labels{"f": "yes"}}},
			{"u_field", []kopfgo.ChangeOption{kopfgo.Field("spec.field")}},                                                                  // (compat: filters-field-change)
			{"u_value", []kopfgo.ChangeOption{kopfgo.Field("spec.field"), kopfgo.Value("world")}},                                           // (compat: filters-field-change)
			{"u_added", []kopfgo.ChangeOption{kopfgo.Field("spec.field"), kopfgo.OldValue(kopfgo.Absent), kopfgo.NewValue(kopfgo.Present)}}, // (compat: filters-old-new)
			{"u_when_change", []kopfgo.ChangeOption{kopfgo.WhenChange(func(c *kopfgo.Change) bool {
				for _, it := range c.Diff {
					if c.Reason == kopfgo.ReasonUpdate && slices.Equal(it.Path, []string{"spec", "items"}) {
						return true
					}
				}
				return false
			})}},
		} {
			op.On.Update(kex, rec.change(reg.id), append(reg.opts, kopfgo.ID(reg.id))...)
		}
		op.On.Field(kex, "spec.field", rec.change("f_new"), kopfgo.ID("f_new"), kopfgo.NewValue("world"))
		op.On.Field(kex, "spec.field", rec.change("f_label"), kopfgo.ID("f_label"), kopfgo.Labels{"f": "yes"})
		op.On.Delete(kex, rec.change("d_label"), kopfgo.ID("d_label"), kopfgo.Labels{"f": "yes"})
		op.On.Delete(kex, rec.change("d_value"), kopfgo.ID("d_value"), kopfgo.Field("spec.field"), kopfgo.Value("world"))
		op.On.Event(kex, func(ctx context.Context, e *kopfgo.WatchEvent) (any, error) {
			rec.add("e_label", e.Name)
			return nil, nil
		}, kopfgo.ID("e_label"), kopfgo.Labels{"f": "yes"})
		op.On.Event(kex, func(ctx context.Context, e *kopfgo.WatchEvent) (any, error) {
			rec.add("e_field", e.Name+"="+e.Spec["field"].(string))
			return nil, nil
		}, kopfgo.ID("e_field"), kopfgo.Field("spec.field"), kopfgo.Value("world"))
	})

	createKex(t, ns, kexObj("a", map[string]any{"f": "yes"}, map[string]any{"ann": "yes"}, map[string]any{"field": "world", "when": true}))
	createKex(t, ns, kexObj("b", map[string]any{"f": "no"}, nil, map[string]any{"field": "hello", "nofield": "x"}))
	createKex(t, ns, kexObj("c", nil, nil, map[string]any{"other": 1}))
	for _, name := range []string{"a", "b", "c"} {
		waitKex(t, ns, name, "handled", handled)
	}
	if fin := getKex(t, ns, "a").GetFinalizers(); len(fin) != 1 {
		t.Errorf("a's finalizers = %v, want the finalizer: its delete handler matches", fin)
	}
	for _, name := range []string{"b", "c"} {
		if fin := getKex(t, ns, name).GetFinalizers(); len(fin) != 0 {
			t.Errorf("%s's finalizers = %v, want none: no delete handler matches it (compat: persistence-finalizer)", name, fin)
		}
	}

	patchKex(t, ns, "a", `{"spec":{"field":"changed"}}`)
	waitHandledWith(t, ns, "a", `"field":"changed"`)
	patchKex(t, ns, "b", `{"spec":{"field":"world"}}`)
	waitHandledWith(t, ns, "b", `"field":"world"`)
	waitKex(t, ns, "b", "b's finalizer, now that d_value matches it", func(u *unstructured.Unstructured) bool {
		return len(u.GetFinalizers()) == 1
	})
	patchKex(t, ns, "c", `{"spec":{"field":"x"}}`)
	waitHandledWith(t, ns, "c", `"field":"x"`)
	patchKex(t, ns, "a", `{"spec":{"items":[1]}}`)
	waitHandledWith(t, ns, "a", `"items":[1]`)
	for _, name := range []string{"a", "b", "c"} {
		deleteKex(t, ns, name)
	}
	for _, name := range []string{"a", "b", "c"} {
		waitGone(t, ns, name)
		log.WaitFor(t, reallyDeleted(ns, name), 1) // the operator is done with it
	}

	want := map[string][]string{
		"c_label_exact":    {"a"},
		"c_label_present":  {"a", "b"},
		"c_label_absent":   {"c"},
		"c_label_callback": {"a"},
		"c_annotation":     {"a"},
		"c_field_value":    {"a"},
		"c_field_absent":   {"a", "b", "c"}, // b too: its missing old state (Kopf's code)
		"c_when":           {"a"},
		"u_label":          {"a", "a"},
		"u_field":          {"a", "b", "c"},
		"u_value":          {"a", "b"}, // world→changed, hello→world
		"u_added":          {"c"},
		"u_when_change":    {"a"},
		"f_new":            {"a", "b"}, // a on creation (Kopf's code), b on update
		"f_label":          {"a", "a"}, // creation and update
		"d_label":          {"a"},
		"d_value":          {"b"},
	}
	for id, names := range want {
		got := rec.of(id)
		slices.Sort(got)
		if !slices.Equal(got, names) {
			t.Errorf("%s ran for %v, want %v", id, got, names)
		}
	}
	// Event handlers see every event of the objects that match, as the
	// objects are at that event (compat: filters-field).
	if got := rec.of("e_label"); len(got) == 0 || slices.ContainsFunc(got, func(s string) bool { return s != "a" }) {
		t.Errorf("e_label saw %v, want events of a only", got)
	}
	fields := rec.of("e_field")
	if !slices.Contains(fields, "a=world") || !slices.Contains(fields, "b=world") ||
		slices.ContainsFunc(fields, func(s string) bool { return !strings.HasSuffix(s, "=world") }) {
		t.Errorf("e_field saw %v, want events of a and b while their field is world", fields)
	}
}

// TestStealthModeAndLateMatches: an object that no handler matches gets
// nothing; when it starts matching, it is created, not updated (compat: filters-stealth).
func TestStealthModeAndLateMatches(t *testing.T) {
	ns := namespace(t)
	var rec recorder
	record := func(ctx context.Context, c *kopfgo.Change) (any, error) {
		rec.add(c.Name, string(c.Reason))
		return nil, nil
	}
	var cu caughtUp
	log := embedded(t, ns, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", record, kopfgo.ID("create_fn"), kopfgo.Labels{"watched": "yes"})
		op.On.Update("kopfexamples", record, kopfgo.ID("update_fn"), kopfgo.Labels{"watched": "yes"})
		cu.register(op) // an event handler: it sees every object, and stores nothing
	})
	createKex(t, ns, kexObj("hidden", nil, nil, map[string]any{"field": "a"}))
	patchKex(t, ns, "hidden", `{"spec":{"field":"b"}}`)
	createKex(t, ns, kexObj("seen", map[string]any{"watched": "yes"}, nil, map[string]any{"field": "a"}))
	waitKex(t, ns, "seen", "handled", handled)
	cu.wait(t, ns, "hidden")
	for k := range getKex(t, ns, "hidden").GetAnnotations() {
		if strings.HasPrefix(k, "kopf.zalando.org/") {
			t.Errorf("annotation %s on an object no handler matches", k)
		}
	}
	// Only the event handler of the markers has anything to say about it.
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, "["+ns+"/hidden]") && !strings.Contains(line, "'"+caughtUpID+"'") {
			t.Errorf("a log line about an object no handler matches: %s", line)
		}
	}
	patchKex(t, ns, "hidden", `{"metadata":{"labels":{"watched":"yes"}}}`)
	waitKex(t, ns, "hidden", "handled", handled)
	if got := rec.of("hidden"); !slices.Equal(got, []string{"create"}) {
		t.Errorf("the late match was handled as %v, want a creation", got)
	}
}

// TestInvalidFilterFailsRunBeforeWatching: registration mistakes come back
// from Run, each naming its handler, and nothing starts.
func TestInvalidFilterFailsRunBeforeWatching(t *testing.T) {
	ns := namespace(t)
	sink := &logSink{}
	op := kopfgo.New(kopfgo.Options{
		Namespaces: []string{ns},
		RESTConfig: cluster.Shared(t).RESTConfig(),
		Logger:     logging.New(logging.Config{Format: logging.FormatPlain, Level: slog.LevelDebug, Writer: sink}),
	})
	noop := func(ctx context.Context, c *kopfgo.Change) (any, error) { return nil, nil }
	op.On.Update("kopfexamples", noop, kopfgo.ID("checker"), kopfgo.Value("x"))
	op.On.Create("kopfexamples", noop, kopfgo.ID("creator"), kopfgo.Field("spec.x"), kopfgo.OldValue("y"))
	op.On.Event("kopfexamples", func(ctx context.Context, e *kopfgo.WatchEvent) (any, error) { return nil, nil },
		kopfgo.ID("watcher"), kopfgo.Labels{"a": nil})
	ctx, cancel := context.WithTimeout(context.Background(), waitShort)
	defer cancel()
	start := time.Now()
	err := op.Run(ctx)
	if !errors.Is(err, kopfgo.ErrRegistration) {
		t.Fatalf("Run: %v, want a registration error", err)
	}
	for _, want := range []string{
		`On.Update("kopfexamples") handler "checker"`, "need a field",
		`On.Create("kopfexamples") handler "creator"`, "only be used in update and field handlers",
		`On.Event("kopfexamples") handler "watcher"`, "nil is not a filter value",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not mention %q:\n%v", want, err)
		}
	}
	if ctx.Err() != nil || time.Since(start) > waitShort/2 {
		t.Errorf("Run did not return at once")
	}
	if strings.Contains(sink.String(), "Serving") {
		t.Errorf("the operator started watching:\n%s", sink)
	}
}
