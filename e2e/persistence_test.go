//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo"
)

// kopfTime is the timestamp format Kopf writes in progress records.
var kopfTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$`)

func TestTemporaryErrorRetriesWithPersistedProgress(t *testing.T) {
	ns := namespace(t)
	var (
		mu      sync.Mutex
		retries []int
		started []time.Time
	)
	log := embedded(t, ns, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", func(ctx context.Context, c *kopfgo.Change) (any, error) {
			mu.Lock()
			retries = append(retries, c.Retry)
			started = append(started, c.Started)
			mu.Unlock()
			if c.Retry < 2 {
				return nil, kopfgo.TemporaryMsg(fmt.Sprintf("not ready %d", c.Retry), time.Second)
			}
			return map[string]any{"retry": c.Retry}, nil
		}, kopfgo.ID("create_fn"))
	})
	obj := createKex(t, ns, objYAML(t))

	// Between the tries, the record is on the object in Kopf's format.
	var rec map[string]any
	eventually(t, waitShort, "a progress record with retries", func() (bool, error) {
		raw, ok := getKex(t, ns, obj.GetName()).GetAnnotations()["kopf.zalando.org/create_fn"]
		if !ok {
			return false, nil
		}
		rec = nil
		return json.Unmarshal([]byte(raw), &rec) == nil && rec["retries"] != nil, nil
	})
	if rec["purpose"] != "create" || rec["success"] != false || rec["failure"] != false ||
		!strings.HasPrefix(fmt.Sprint(rec["message"]), "not ready") {
		t.Errorf("record = %v", rec)
	}
	for _, k := range []string{"started", "delayed"} {
		if s, _ := rec[k].(string); !kopfTime.MatchString(s) {
			t.Errorf("record %s = %v, not in Kopf's format", k, rec[k])
		}
	}

	log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", 1)
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(retries) != "[0 1 2]" {
		t.Errorf("retries seen = %v, want [0 1 2]", retries)
	}
	if !started[0].Equal(started[2]) {
		t.Errorf("started changed across retries: %v", started)
	}
	got := waitKex(t, ns, obj.GetName(), "handled", handled)
	for k := range got.GetAnnotations() {
		if k == "kopf.zalando.org/create_fn" || k == "kopf.zalando.org/touch-dummy" {
			t.Errorf("annotation %s left after success", k)
		}
	}
	if v := got.Object["status"].(map[string]any)["create_fn"]; fmt.Sprint(v) != "map[retry:2]" {
		t.Errorf("status.create_fn = %v", v)
	}
	if n := log.Count("Handler 'create_fn' failed temporarily: not ready"); n != 2 {
		t.Errorf("%d temporary failures logged, want 2", n)
	}
}

// An object last handled by Kopf is taken over: its diff-base and progress,
// written here exactly as Kopf writes them, are honoured.
func TestTakesOverObjectsHandledByKopf(t *testing.T) {
	ns := namespace(t)
	obj := objYAML(t)
	started := "2026-01-02T03:04:05.123456+00:00"
	past := time.Now().Add(-time.Minute).UTC().Format("2006-01-02T15:04:05.000000+00:00")
	meta := obj["metadata"].(map[string]any)
	meta["annotations"] = map[string]any{
		"someannotation": "somevalue",
		// Python's json.dumps(essence, separators=(',', ':')) + "\n", in Kopf's key order.
		"kopf.zalando.org/last-handled-configuration": `{"spec":{"duration":"1m","field":"value","items":["item1","item2"]},"metadata":{"labels":{"somelabel":"somevalue"},"annotations":{"someannotation":"somevalue"}}}` + "\n",
	}
	byKopf := createKex(t, ns, obj)

	obj2 := objYAML(t)
	meta2 := obj2["metadata"].(map[string]any)
	meta2["name"] = "kopf-example-2"
	meta2["annotations"] = map[string]any{
		"someannotation":      "somevalue",
		"kopf.zalando.org/h1": `{"started":"` + started + `","stopped":"` + started + `","purpose":"create","retries":1,"success":true,"failure":false}`,
		"kopf.zalando.org/h2": `{"started":"` + started + `","delayed":"` + past + `","purpose":"create","retries":2,"success":false,"failure":false,"message":"Not ready yet."}`,
	}
	pending := createKex(t, ns, obj2)

	var h1, h2 calls
	var cu caughtUp
	log := embedded(t, ns, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", h1.fn, kopfgo.ID("h1"))
		op.On.Create("kopfexamples", h2.fn, kopfgo.ID("h2"))
		cu.register(op)
	})
	log.WaitFor(t, "Creation is processed: 2 succeeded; 0 failed.", 1)
	cu.wait(t, ns, byKopf.GetName())
	cu.wait(t, ns, pending.GetName())
	if n := h1.count(); n != 0 {
		t.Errorf("h1 ran %d times although Kopf recorded its success", n)
	}
	c := h2.all()
	if len(c) != 1 {
		t.Fatalf("h2 ran %d times, want once (only for the pending object)", len(c))
	}
	if c[0].Name != pending.GetName() || c[0].Retry != 2 || c[0].Started.Format("2006-01-02T15:04:05.000000") != "2026-01-02T03:04:05.123456" {
		t.Errorf("h2 saw name=%s retry=%d started=%v; want the pending object, retry 2, Kopf's started", c[0].Name, c[0].Retry, c[0].Started)
	}
	if n := log.Count("[" + ns + "/" + byKopf.GetName() + "] Handler 'h"); n != 0 {
		t.Errorf("handlers ran for the object Kopf had handled")
	}
	// What kopfgo wrote parses as Kopf's: a diff-base with a trailing newline.
	raw := waitKex(t, ns, pending.GetName(), "handled", handled).GetAnnotations()["kopf.zalando.org/last-handled-configuration"]
	var essence map[string]any
	if !strings.HasSuffix(raw, "}\n") || json.Unmarshal([]byte(raw), &essence) != nil || essence["spec"] == nil {
		t.Errorf("diff-base = %q", raw)
	}
	if _, ok := essence["status"]; ok {
		t.Errorf("diff-base contains status: %q", raw)
	}
}

func TestCorruptAnnotationsAreReportedAndTheObjectHandled(t *testing.T) {
	ns := namespace(t)
	obj := objYAML(t)
	obj["metadata"].(map[string]any)["annotations"] = map[string]any{
		"kopf.zalando.org/last-handled-configuration": `{"spec": garbage`,
		"kopf.zalando.org/create_fn":                  `not json at all`,
	}
	created := createKex(t, ns, obj)
	var creates calls
	log := embedded(t, ns, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", creates.fn, kopfgo.ID("create_fn"))
	})
	log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", 1)
	prefix := "[" + ns + "/" + created.GetName() + "]"
	for _, key := range []string{"kopf.zalando.org/last-handled-configuration", "kopf.zalando.org/create_fn"} {
		found := false
		for _, l := range strings.Split(log.String(), "\n") {
			if strings.HasPrefix(l, prefix) && strings.Contains(l, key) && (strings.Contains(l, "unreadable") || strings.Contains(l, "Ignoring")) {
				found = true
			}
		}
		if !found {
			t.Errorf("no warning naming the object and %s", key)
		}
	}
	if n := creates.count(); n != 1 {
		t.Errorf("create handler ran %d times, want 1", n)
	}
	ann := waitKex(t, ns, created.GetName(), "handled", handled).GetAnnotations()
	var essence map[string]any
	if err := json.Unmarshal([]byte(ann["kopf.zalando.org/last-handled-configuration"]), &essence); err != nil {
		t.Errorf("the diff-base was not repaired: %v", err)
	}
	if _, ok := ann["kopf.zalando.org/create_fn"]; ok {
		t.Errorf("the corrupt record was not purged")
	}
}
