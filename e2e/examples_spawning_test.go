//go:build e2e

package e2e

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Kopf's examples 14-daemons and 15-timers, run as `kopfgo run`, checked by
// their log lines (Kopf's E2E_CREATION_STOP_WORDS and deletion words) and
// the object's state.

func TestExample14Daemons(t *testing.T) {
	ns := namespace(t)
	op := runOperator(t, "./examples/14-daemons", ns)
	obj := createKex(t, ns, objYAML(t))
	name := obj.GetName()

	// Three failures each, a second apart, then the pings (compat: daemons-errors).
	waitLog(t, op, "=> Ping from a sync daemon: field=\"value\", retry=3", 1)
	waitLog(t, op, "=> Ping from an async daemon: field=\"value\"", 1)
	assertCount(t, op, "Daemon 'background_sync' failed temporarily: Simulated failure.", 3)
	assertCount(t, op, "Daemon 'background_async' failed temporarily: Simulated failure.", 3)
	got := getKex(t, ns, name)
	if msg, _, _ := unstructured.NestedString(got.Object, "status", "message"); msg != "Failed 3 times." {
		t.Errorf("status.message = %q, want the third failure's patch", msg)
	}
	if fin := got.GetFinalizers(); len(fin) != 1 || fin[0] != "kopf.zalando.org/KopfFinalizerMarker" {
		t.Errorf("finalizers = %v, want Kopf's finalizer while the daemons run", fin)
	}

	// The daemons read the live object (compat: daemons-live).
	patchKex(t, ns, name, `{"spec":{"field":"other"}}`)
	waitLog(t, op, "=> Ping from a sync daemon: field=\"other\", retry=3", 1)
	waitLog(t, op, "=> Ping from an async daemon: field=\"other\"", 1)

	// Deletion stops both; the object goes only after they have exited.
	deleteKex(t, ns, name)
	waitGone(t, ns, name)
	assertCount(t, op, "Daemon 'background_sync' has exited on request and will not be retried or restarted.", 1)
	assertCount(t, op, "Daemon 'background_async' is signalled to exit gracefully.", 1)
	assertCount(t, op, "Daemon 'background_async' has exited on request and will not be retried or restarted.", 1)
	assertCount(t, op, "did not exit in time", 0)
	assertCount(t, op, "Removing the finalizer, thus allowing the actual deletion.", 1)
	exited := op.Count("Daemon 'background_async' has exited on request")
	if exited != 1 {
		t.Errorf("the async daemon exited %d times, want 1", exited)
	}
}

func TestExample15Timers(t *testing.T) {
	ns := namespace(t)
	op := runOperator(t, "./examples/15-timers", ns)
	obj := createKex(t, ns, objYAML(t))
	name := obj.GetName()

	waitLog(t, op, `Ping from a sync timer: field="value"`, 2)
	waitLog(t, op, `Ping from an async timer: field="value"`, 1)

	// A change restarts the idle times; the next pings see the new value.
	patchKex(t, ns, name, `{"spec":{"field":"other"}}`)
	waitLog(t, op, `Ping from a sync timer: field="other"`, 2)
	waitLog(t, op, `Ping from an async timer: field="other"`, 1)
	// The async timer needs 10 quiet seconds, the sync one 5 and then fires
	// every 2: it has pinged at least twice before the async one's first.
	if n := op.Count(`Ping from a sync timer: field="other"`); n < 2 {
		t.Errorf("%d sync pings after the change, want at least 2 before the async one's first", n)
	}

	deleteKex(t, ns, name)
	waitGone(t, ns, name)
	assertCount(t, op, "Timer 'every_few_seconds_sync' has exited on request and will not be retried or restarted.", 1)
	assertCount(t, op, "Timer 'every_few_seconds_async' has exited on request and will not be retried or restarted.", 1)
	assertCount(t, op, "Timer 'every_few_seconds_sync' succeeded.", op.Count("Ping from a sync timer"))
}
