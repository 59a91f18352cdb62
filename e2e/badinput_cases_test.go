//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func nested(depth int) any {
	var v any = "bottom"
	for range depth {
		v = map[string]any{"n": v}
	}
	return v
}

func badCases() []badCase {
	future := time.Now().Add(24 * 365 * time.Hour).UTC().Format("2006-01-02T15:04:05.000000+00:00")
	cases := []badCase{
		// Objects with wrong types where handlers and filters look.
		{name: "spec-string", spec: "just a string", calls: map[string]int{"field_fn": 0, "valued_fn": 0, "update_fn": 0}},
		{name: "spec-number", spec: 42},
		{name: "spec-list", spec: []any{"a", 1}},
		{name: "spec-null", noSpec: true},
		{name: "spec-field-map", spec: map[string]any{"field": map[string]any{"nested": true}}, calls: map[string]int{"valued_fn": 0}},
		{name: "spec-field-int", spec: map[string]any{"field": 7}, calls: map[string]int{"valued_fn": 0}},
		{name: "labels-null", raw: `{"apiVersion":"e2e.kopfgo.dev/v1","kind":"BadInput","metadata":{"name":"NAME","labels":null,"annotations":null},"spec":{"field":"value"}}`},
		{name: "labels-filter-empty", meta: map[string]any{"labels": map[string]any{"filter": ""}}, calls: map[string]int{"labelled_fn": 1}},
		{name: "annotation-filter-other", meta: ann("filter", "no"), calls: map[string]int{"annotated_fn": 0}},
		// The diff-base copies the spec and annotations into an annotation:
		// past 256 KiB in all, the API server refuses it. The error is logged
		// with the API's reason and retried with growing delays; the last
		// handler of the pass runs again each time (its success goes in the
		// refused patch): a limit of the annotation storage, as in Kopf.
		{name: "huge-annotation", meta: ann("big", strings.Repeat("x", 200*1024)), logs: []string{"metadata.annotations: Too long"}, want: notHandledYet},
		{name: "huge-spec", spec: map[string]any{"blob": strings.Repeat("y", 300*1024)}, creates: -1, logs: []string{"metadata.annotations: Too long"}, want: notHandledYet},
		{name: "deep-spec", spec: nested(80)},
		{name: "many-labels", meta: map[string]any{"labels": manyLabels(100)}},
		{name: "unicode-values", spec: map[string]any{"field": "héllo wörld 🌍", "ключ": "値"}, meta: ann("note", "日本語 ✓")},
		{name: "invalid-utf8", raw: "{\"apiVersion\":\"e2e.kopfgo.dev/v1\",\"kind\":\"BadInput\",\"metadata\":{\"name\":\"NAME\",\"annotations\":{\"bad\":\"a\xffb\"}},\"spec\":{\"field\":\"c\xfe\"}}"},
		{name: "dotted-keys", spec: map[string]any{"a.b/c": 1, "field": "value"}},
		{name: "big-numbers", spec: map[string]any{"int": int64(9007199254740993), "float": 1e308, "neg": -0.0, "tiny": 5e-324}, calls: map[string]int{"update_fn": 0}},
		{name: "foreign-finalizer", meta: map[string]any{"finalizers": []any{"example.com/other"}}, want: hasFinalizers("example.com/other", "kopf.zalando.org/KopfFinalizerMarker")},
		{name: strings.Repeat("l", 200)},

		// Progress records of every malformed shape.
		corruptProgress("progress-truncated", `{"started":"2026-01-0`),
		corruptProgress("progress-garbage", `not json at all`),
		corruptProgress("progress-array", `[]`),
		corruptProgress("progress-string", `"success"`),
		corruptProgress("progress-number", `42`),
		corruptProgress("progress-retries-string", `{"retries":"3"}`),
		corruptProgress("progress-retries-float", `{"retries":1.5}`),
		corruptProgress("progress-success-string", `{"success":"true"}`),
		corruptProgress("progress-started-number", `{"started":1700000000}`),
		corruptProgress("progress-started-words", `{"started":"yesterday"}`),
		corruptProgress("progress-subrefs-string", `{"subrefs":"a"}`),
		corruptProgress("progress-empty", ``),
		{name: "progress-null", early: true, meta: ann(progress, `null`)},
		{name: "progress-retries-negative", early: true, meta: ann(progress, `{"retries":-5,"purpose":"create"}`)},
		{name: "progress-retries-huge", early: true, meta: ann(progress, `{"retries":2147483647,"purpose":"create"}`)},
		{name: "progress-unknown-fields", early: true, meta: ann(progress, `{"retries":1,"purpose":"create","whatever":{"x":[1]}}`)},
		{name: "progress-started-future", early: true, meta: ann(progress, `{"started":"`+future+`","purpose":"create","retries":0}`)},
		{name: "progress-started-space", early: true, meta: ann(progress, `{"started":"2026-01-02 03:04:05","purpose":"create"}`)},
		{name: "progress-started-offset", early: true, meta: ann(progress, `{"started":"2026-01-02T03:04:05+05:30","purpose":"create"}`)},
		{name: "progress-delayed-future", early: true, meta: ann(progress, `{"delayed":"`+future+`","purpose":"create","retries":1}`), creates: -1, want: notHandledYet, logs: []string{"Sleeping for 315359"}},
		{name: "progress-succeeded", early: true, meta: ann(progress, `{"purpose":"create","success":true,"retries":1}`), creates: -1, calls: map[string]int{"create_fn": 0}},
		{name: "progress-failed", early: true, meta: ann(progress, `{"purpose":"create","failure":true,"retries":1,"message":"earlier"}`), creates: -1, calls: map[string]int{"create_fn": 0}},
		// A record of another cause is stale: the handler starts afresh,
		// as in Kopf, which says nothing about it either.
		{name: "progress-purpose-unknown", early: true, meta: ann(progress, `{"purpose":"frobnicate","retries":1}`)},
		{name: "progress-huge-message", early: true, meta: ann(progress, `{"purpose":"create","retries":1,"message":"`+strings.Repeat("m", 50*1024)+`"}`)},
		// A record of a handler this operator does not have is not its to
		// purge (another operator's, or a removed handler's): left as is.
		{name: "progress-unknown-handler", early: true, meta: ann("kopf.zalando.org/ghost_fn", `{"purpose":"create","retries":1}`), want: func(u *unstructured.Unstructured) error {
			a := u.GetAnnotations()
			if a[lhc] == "" || a["kopf.zalando.org/ghost_fn"] != `{"purpose":"create","retries":1}` {
				return fmt.Errorf("annotations %v", a)
			}
			return nil
		}},

		// Diff-bases of every malformed shape.
		corruptDiffBase("diffbase-truncated", `{"spec":`),
		corruptDiffBase("diffbase-array", `[]`),
		corruptDiffBase("diffbase-string", `"spec"`),
		corruptDiffBase("diffbase-number", `42`),
		corruptDiffBase("diffbase-garbage", `garbage`),
		{name: "diffbase-null", early: true, meta: ann(lhc, `null`)},
		{name: "diffbase-empty-object", early: true, meta: ann(lhc, `{}`), creates: -1, calls: map[string]int{"create_fn": 0, "update_fn": 1}},
		{name: "diffbase-stale", early: true, meta: ann(lhc, `{"spec":{"field":"old"}}`+"\n"), creates: -1, calls: map[string]int{"create_fn": 0, "update_fn": 1, "field_fn": 1}},
		{name: "diffbase-unknown-field", early: true, meta: ann(lhc, `{"spec":{"field":"value"},"zzz":1}`), creates: -1, calls: map[string]int{"create_fn": 0, "update_fn": 1}},
		{name: "diffbase-no-newline", early: true, meta: ann(lhc, `{"spec":{"field":"value"}}`), creates: -1, calls: map[string]int{"create_fn": 0, "update_fn": 0}},
		{name: "diffbase-and-progress", early: true, meta: ann(lhc, `{`, progress, `{`), logs: []string{lhc, progress}},

		// Finalizers edited by others, deletion.
		{name: "finalizer-removed-by-other", then: removeFinalizerThenDelete, gone: true, calls: map[string]int{"delete_fn": 1}},
		{name: "finalizer-concurrent-edit", meta: map[string]any{"finalizers": []any{"example.com/first"}}, then: deleteWhileOthersEdit, gone: true, calls: map[string]int{"delete_fn": 1}, noLogs: []string{"no new finalizers"}},
		{name: "finalizer-other-stays", meta: map[string]any{"finalizers": []any{"example.com/keep"}}, then: deleteAndWait, want: onlyFinalizers("example.com/keep"), calls: map[string]int{"delete_fn": 1}},

		// The cluster changing under the operator.
		{name: "no-status-subresource", gvr: &noStatusGVR, want: resultInStatus},
	}
	// One error answer to a patch of the object, or of its status: the
	// error is logged naming the object (403 with the RBAC advice), the
	// pass is retried after a throttling delay (429 with Retry-After is
	// retried by client-go itself, 5xx by kopfgo's request retries), and
	// the results reach the object. A failed patch keeps the handler's
	// outcome, which the next pass writes again, so the handler runs once
	// (compat: queueing-unwritten). A 404 means "gone" to the operator (as
	// to Kopf): the object waits for its next change, which then handles
	// it, and a failed status patch's outcome is lost with it.
	for _, pf := range []struct {
		code          int
		status        bool
		log           string
		creates       int
		retryAfter    bool
		touchWhenGone bool
	}{
		{403, false, `may not patch badinputs.v1.e2e.kopfgo.dev`, 1, false, false},
		{403, true, `may not patch the status of badinputs.v1.e2e.kopfgo.dev`, 1, false, false},
		{404, false, "The object is gone while patching", 1, false, true},
		{404, true, "The object is gone while patching", 2, false, true},
		{409, false, "The object has changed meanwhile", 1, false, false},
		{409, true, "Throttling for 1 seconds due to an unexpected error", 1, false, false},
		{410, false, "injected 410", 1, false, false},
		{410, true, "injected 410", 1, false, false},
		{422, false, "injected 422", 1, false, false},
		{422, true, "injected 422", 1, false, false},
		{429, false, "", 1, true, false},
		{429, true, "", 1, true, false},
		{500, false, "Request attempt #1/9 failed; will retry", 1, false, false},
		{500, true, "Request attempt #1/9 failed; will retry", 1, false, false},
		{503, false, "Request attempt #1/9 failed; will retry", 1, false, false},
		{503, true, "Request attempt #1/9 failed; will retry", 1, false, false},
	} {
		c := patchFault(pf.code, pf.status)
		c.fault.RetryAfter = pf.retryAfter
		c.logs = nil
		if pf.log != "" {
			c.logs = []string{pf.log}
		}
		c.creates = pf.creates
		c.want = resultInStatus
		if pf.touchWhenGone {
			c.then = touchAfter(pf.log)
		}
		cases = append(cases, c)
	}
	return cases
}

func manyLabels(n int) map[string]any {
	m := map[string]any{}
	for i := range n {
		m[fmt.Sprintf("label-%03d", i)] = fmt.Sprintf("v%d", i)
	}
	return m
}

// notHandledYet: the object keeps no diff-base (the operator could not, or
// must not yet, finish it) and is otherwise intact.
func notHandledYet(u *unstructured.Unstructured) error {
	if _, ok := u.GetAnnotations()[lhc]; ok {
		return fmt.Errorf("has a diff-base")
	}
	return nil
}

func hasFinalizers(want ...string) func(u *unstructured.Unstructured) error {
	return func(u *unstructured.Unstructured) error {
		if !handled(u) {
			return fmt.Errorf("not handled")
		}
		if fmt.Sprint(u.GetFinalizers()) != fmt.Sprint(want) {
			return fmt.Errorf("finalizers %v, want %v", u.GetFinalizers(), want)
		}
		return nil
	}
}

func onlyFinalizers(want ...string) func(u *unstructured.Unstructured) error {
	return func(u *unstructured.Unstructured) error {
		if u.GetDeletionTimestamp() == nil || fmt.Sprint(u.GetFinalizers()) != fmt.Sprint(want) {
			return fmt.Errorf("deleting=%v finalizers %v, want %v", u.GetDeletionTimestamp() != nil, u.GetFinalizers(), want)
		}
		return nil
	}
}

func resultInStatus(u *unstructured.Unstructured) error {
	if !handled(u) {
		return fmt.Errorf("not handled")
	}
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "create_fn", "ok")
	if v != "create_fn" {
		return fmt.Errorf("status.create_fn = %v", u.Object["status"])
	}
	return nil
}

func waitBad(t *testing.T, bc *badCtx, name, what string, cond func(u *unstructured.Unstructured) bool) {
	eventually(t, waitLong, name+": "+what, func() (bool, error) {
		u, err := dyn(t).Resource(badGVR).Namespace(bc.ns).Get(context.Background(), name, metav1.GetOptions{})
		return err == nil && cond(u), err
	})
}

func hasOwnFinalizer(u *unstructured.Unstructured) bool {
	for _, f := range u.GetFinalizers() {
		if f == "kopf.zalando.org/KopfFinalizerMarker" {
			return true
		}
	}
	return false
}

// removeFinalizerThenDelete: someone strips kopfgo's finalizer, then the
// object is deleted: it goes at once, as documented, without delete handlers.
func removeFinalizerThenDelete(t *testing.T, bc *badCtx, name string) {
	waitBad(t, bc, name, "handled with the finalizer", func(u *unstructured.Unstructured) bool { return handled(u) && hasOwnFinalizer(u) })
	res := dyn(t).Resource(badGVR).Namespace(bc.ns)
	if _, err := res.Patch(context.Background(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Error(err)
	}
	// As Kopf does, the operator puts back the finalizer its delete handler
	// needs (deleting at once would race with that).
	waitBad(t, bc, name, "the finalizer put back", hasOwnFinalizer)
	if err := res.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Error(err)
	}
}

// deleteWhileOthersEdit: the object is deleted while another controller
// removes its own finalizer and adds and removes another, concurrently with
// the delete handler: nobody's edit may be undone.
func deleteWhileOthersEdit(t *testing.T, bc *badCtx, name string) {
	waitBad(t, bc, name, "handled with the finalizer", func(u *unstructured.Unstructured) bool { return handled(u) && hasOwnFinalizer(u) })
	res := dyn(t).Resource(badGVR).Namespace(bc.ns)
	ctx := context.Background()
	if err := res.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Error(err)
	}
	for _, f := range []string{"example.com/first", "example.com/second"} {
		for {
			u, err := res.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				break
			}
			var list []string
			for _, x := range u.GetFinalizers() {
				if x != f {
					list = append(list, x)
				}
			}
			u.SetFinalizers(list)
			if _, err := res.Update(ctx, u, metav1.UpdateOptions{}); err == nil {
				break
			}
		}
	}
}

func deleteAndWait(t *testing.T, bc *badCtx, name string) {
	waitBad(t, bc, name, "handled with the finalizer", func(u *unstructured.Unstructured) bool { return handled(u) && hasOwnFinalizer(u) })
	if err := dyn(t).Resource(badGVR).Namespace(bc.ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Error(err)
	}
}

// touchAfter waits for the log line, then changes a label: the change an
// object left alone after a 404 needs to be handled.
func touchAfter(line string) func(t *testing.T, bc *badCtx, name string) {
	return func(t *testing.T, bc *badCtx, name string) {
		eventually(t, waitLong, name+": "+line, func() (bool, error) { return bc.hasLine(name, line), nil })
		_, err := dyn(t).Resource(badGVR).Namespace(bc.ns).Patch(context.Background(), name, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{})
		if err != nil {
			t.Error(err)
		}
	}
}
