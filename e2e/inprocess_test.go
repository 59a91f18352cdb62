//go:build e2e

package e2e

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/cluster"
	"github.com/kopfgo/kopfgo/internal/logging"
	"github.com/kopfgo/kopfgo/internal/testlog"
)

// logSink collects an in-process operator's log lines.
type logSink struct {
	testlog.Buffer
}

// Count is how many lines contain substr.
func (s *logSink) Count(substr string) int {
	n := 0
	for _, l := range strings.Split(s.String(), "\n") {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

func (s *logSink) WaitFor(t *testing.T, substr string, n int) {
	t.Helper()
	eventually(t, waitLong, "log line "+substr, func() (bool, error) { return s.Count(substr) >= n, nil })
}

// embedded runs an embedded operator in the test's process, limited to ns,
// until the test ends; Run's own error is checked then.
func embedded(t *testing.T, ns string, register func(op *kopfgo.Operator)) *logSink {
	t.Helper()
	return embeddedWith(t, kopfgo.Options{Namespaces: []string{ns}}, register)
}

// embeddedWith is embedded with options of the test's own; the shared
// cluster and a debug log are the defaults.
func embeddedWith(t *testing.T, opts kopfgo.Options, register func(op *kopfgo.Operator)) *logSink {
	t.Helper()
	return embeddedIn(t, logging.FormatPlain, opts, register)
}

// embeddedIn is embeddedWith logging in a format of the test's choice
// (FormatFull names each line's level).
func embeddedIn(t *testing.T, format logging.Format, opts kopfgo.Options, register func(op *kopfgo.Operator)) *logSink {
	t.Helper()
	sink := &logSink{}
	if opts.RESTConfig == nil {
		opts.RESTConfig = cluster.Shared(t).RESTConfig()
	}
	opts.Logger = logging.New(logging.Config{Format: format, Level: slog.LevelDebug, Writer: sink})
	op := kopfgo.New(opts)
	register(op)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- op.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(waitShort):
			t.Errorf("Run did not return within %s after its context ended", waitShort)
		}
		if t.Failed() {
			t.Logf("operator log:\n%s", sink)
		}
	})
	return sink
}

// calls records handler invocations as the handlers saw them.
type calls struct {
	mu   sync.Mutex
	seen []*kopfgo.Change
}

func (c *calls) fn(ctx context.Context, ch *kopfgo.Change) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, ch)
	return nil, nil
}

func (c *calls) all() []*kopfgo.Change {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*kopfgo.Change(nil), c.seen...)
}

func (c *calls) count() int { return len(c.all()) }

// TestFieldHandlersOnUpdatesOnly: with Settings.Handling's manual readings,
// a field handler does not run on creation, and Absent does not match the
// missing old state of a creation.
func TestFieldHandlersOnUpdatesOnly(t *testing.T) {
	ns := namespace(t)
	var creates, absent, fields calls
	opts := kopfgo.Options{Namespaces: []string{ns}}
	opts.Settings.Handling.FieldHandlersOnUpdatesOnly = true
	opts.Settings.Handling.FieldFiltersOnExistingStates = true
	log := embeddedWith(t, opts, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", creates.fn, kopfgo.ID("create"))
		op.On.Create("kopfexamples", absent.fn, kopfgo.ID("absent"), kopfgo.Field("spec.field"), kopfgo.Value(kopfgo.Absent))
		op.On.Field("kopfexamples", "spec.field", fields.fn, kopfgo.ID("field"))
	})
	obj := createKex(t, ns, objYAML(t))
	log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", 1)
	if n, a := fields.count(), absent.count(); n != 0 || a != 0 {
		t.Errorf("on creation: field handler called %d times, Absent-filtered creation handler %d times; want 0, 0", n, a)
	}
	patchKex(t, ns, obj.GetName(), `{"spec":{"field":"changed"}}`)
	log.WaitFor(t, "Updating is processed: 1 succeeded; 0 failed.", 1)
	if f := fields.all(); len(f) != 1 || f[0].Reason != kopfgo.ReasonUpdate {
		t.Errorf("field handler calls = %d, want 1 with reason update", len(f))
	}
}

// TestAbsentFieldFilterMatchesEveryCreation: as in Kopf's code, the missing
// old state of a creation counts as the field absent.
func TestAbsentFieldFilterMatchesEveryCreation(t *testing.T) {
	ns := namespace(t)
	var absent calls
	log := embedded(t, ns, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", absent.fn, kopfgo.ID("absent"), kopfgo.Field("spec.field"), kopfgo.Value(kopfgo.Absent))
	})
	createKex(t, ns, objYAML(t)) // spec.field is set
	log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", 1)
	if n := absent.count(); n != 1 {
		t.Errorf("Absent-filtered creation handler called %d times, want 1", n)
	}
}

func TestUpdateAndFieldHandlersGetTheExactDiff(t *testing.T) {
	ns := namespace(t)
	var creates, updates, fields calls
	var cu caughtUp
	log := embedded(t, ns, func(op *kopfgo.Operator) {
		cu.register(op)
		op.On.Create("kopfexamples", creates.fn, kopfgo.ID("create"))
		op.On.Update("kopfexamples", updates.fn, kopfgo.ID("update"))
		op.On.Field("kopfexamples", "spec.field", fields.fn, kopfgo.ID("field"))
	})
	obj := createKex(t, ns, objYAML(t))
	// As in Kopf's code, the field handler runs on the creation of an
	// object with the field set, with reason create.
	log.WaitFor(t, "Creation is processed: 2 succeeded; 0 failed.", 1)
	f := fields.all()
	if len(f) != 1 {
		t.Fatalf("field handler called %d times on creation, want 1", len(f))
	}
	if f[0].Reason != kopfgo.ReasonCreate || f[0].Old != nil || f[0].New != "value" || mustJSON(t, f[0].Diff) != `[["add",[],null,"value"]]` {
		t.Errorf("field handler on creation saw reason=%s old=%v new=%v diff=%s", f[0].Reason, f[0].Old, f[0].New, mustJSON(t, f[0].Diff))
	}
	if p := getKex(t, ns, obj.GetName()).GetAnnotations()["kopf.zalando.org/last-handled-configuration"]; !strings.Contains(p, `"field":"value"`) {
		t.Errorf("diff-base after creation = %s", p)
	}

	patchKex(t, ns, obj.GetName(), `{"spec":{"field":"changed","items":["item1","item2","item3"]}}`)
	log.WaitFor(t, "Updating is processed: 2 succeeded; 0 failed.", 1)
	if n := updates.count(); n != 1 {
		t.Fatalf("update handler called %d times, want 1", n)
	}
	if got, want := mustJSON(t, updates.all()[0].Diff),
		`[["change",["spec","field"],"value","changed"],["change",["spec","items"],["item1","item2"],["item1","item2","item3"]]]`; got != want {
		t.Errorf("update diff = %s\nwant          %s", got, want)
	}
	f = fields.all()
	if len(f) != 2 {
		t.Fatalf("field handler called %d times, want 2 (create, update)", len(f))
	}
	if f[1].Reason != kopfgo.ReasonUpdate || f[1].Old != "value" || f[1].New != "changed" || mustJSON(t, f[1].Diff) != `[["change",[],"value","changed"]]` {
		t.Errorf("field handler saw reason=%s old=%v new=%v diff=%s", f[1].Reason, f[1].Old, f[1].New, mustJSON(t, f[1].Diff))
	}

	// A status change is not a change; a label change is, for update only.
	patchKex(t, ns, obj.GetName(), `{"status":{"something":"else"}}`, "status")
	patchKex(t, ns, obj.GetName(), `{"metadata":{"labels":{"somelabel":null,"other":"x"}}}`)
	log.WaitFor(t, "Updating is processed: 1 succeeded; 0 failed.", 1)
	cu.wait(t, ns, obj.GetName()) // both patches handled, whatever the order
	if n := updates.count(); n != 2 {
		t.Fatalf("update handler called %d times, want 2 (spec, label; not status)", n)
	}
	if got := mustJSON(t, updates.all()[1].Diff); got != `[["add",["metadata","labels","other"],null,"x"],["remove",["metadata","labels","somelabel"],"somevalue",null]]` {
		t.Errorf("label diff = %s", got)
	}
	if n := fields.count(); n != 2 {
		t.Errorf("field handler called %d times, want 2 (create, update)", n)
	}
	if n := creates.count(); n != 1 {
		t.Errorf("create handler called %d times, want 1", n)
	}
}
