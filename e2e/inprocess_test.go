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
	sink := &logSink{}
	if opts.RESTConfig == nil {
		opts.RESTConfig = cluster.Shared(t).RESTConfig()
	}
	opts.Logger = logging.New(logging.Config{Format: logging.FormatPlain, Level: slog.LevelDebug, Writer: sink})
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
	log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", 1)

	patchKex(t, ns, obj.GetName(), `{"spec":{"field":"changed","items":["item1","item2","item3"]}}`)
	log.WaitFor(t, "Updating is processed: 2 succeeded; 0 failed.", 1)
	if n := updates.count(); n != 1 {
		t.Fatalf("update handler called %d times, want 1", n)
	}
	if got, want := mustJSON(t, updates.all()[0].Diff),
		`[["change",["spec","field"],"value","changed"],["change",["spec","items"],["item1","item2"],["item1","item2","item3"]]]`; got != want {
		t.Errorf("update diff = %s\nwant          %s", got, want)
	}
	f := fields.all()
	if len(f) != 1 {
		t.Fatalf("field handler called %d times, want 1", len(f))
	}
	if f[0].Old != "value" || f[0].New != "changed" || mustJSON(t, f[0].Diff) != `[["change",[],"value","changed"]]` {
		t.Errorf("field handler saw old=%v new=%v diff=%s", f[0].Old, f[0].New, mustJSON(t, f[0].Diff))
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
	if n := fields.count(); n != 1 {
		t.Errorf("field handler called %d times, want 1", n)
	}
	if n := creates.count(); n != 1 {
		t.Errorf("create handler called %d times, want 1", n)
	}
}
