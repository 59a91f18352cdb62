package handling

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopfgo/kopfgo/patch"
)

// brief renders condition changes as "Type=Status/Reason: message" or
// "-Type" for removals, in order.
func brief(chs []patch.ConditionChange) []string {
	var out []string
	for _, ch := range chs {
		if ch.Remove {
			out = append(out, "-"+ch.Type)
			continue
		}
		out = append(out, ch.Type+"="+ch.Status+"/"+ch.Reason+": "+ch.Message)
	}
	return out
}

func TestFor(t *testing.T) {
	cases := []struct {
		name  string
		cycle cycleState
		want  []string
	}{
		{"no handlers: nothing was handled", cycleState{Title: "Creation", Done: true}, nil},
		{"all succeeded", cycleState{Title: "Creation", Done: true, Handlers: []handlerState{{ID: "a", Succeeded: true}, {ID: "b", Succeeded: true}}},
			[]string{"Ready=True/HandlersSucceeded: Creation handled: 2 handlers succeeded.", "-Reconciling", "-Stalled"}},
		{"one pending after a success", cycleState{Title: "Update", Handlers: []handlerState{{ID: "a", Succeeded: true, Retries: 1}, {ID: "b"}}},
			[]string{"Ready=False/HandlersPending: Update in progress: 1 of 2 handlers finished.",
				"Reconciling=True/HandlersPending: Update in progress: 1 of 2 handlers finished.", "-Stalled"}},
		{"retrying: the handler and its error, no attempt count", cycleState{Title: "Creation", Handlers: []handlerState{{ID: "a", Retries: 3, Message: "not yet\nreally"}}},
			[]string{"Ready=False/HandlerRetrying: Handler 'a' is retrying: not yet really",
				"Reconciling=True/HandlerRetrying: Handler 'a' is retrying: not yet really", "-Stalled"}},
		{"interrupted by the exit: pending, not retrying", cycleState{Title: "Creation", Handlers: []handlerState{{ID: "a", Message: "interrupted by the operator's exit"}}},
			[]string{"Ready=False/HandlersPending: Creation in progress: 0 of 1 handlers finished.",
				"Reconciling=True/HandlersPending: Creation in progress: 0 of 1 handlers finished.", "-Stalled"}},
		{"a failure while others are pending: not stalled yet", cycleState{Title: "Creation", Handlers: []handlerState{{ID: "a", Failed: true, Retries: 1, Message: "boom"}, {ID: "b"}}},
			[]string{"Ready=False/HandlersPending: Creation in progress: 1 of 2 handlers finished.",
				"Reconciling=True/HandlersPending: Creation in progress: 1 of 2 handlers finished.", "-Stalled"}},
		{"done with failures: stalled, each failure named", cycleState{Title: "Creation", Done: true, Handlers: []handlerState{
			{ID: "a", Failed: true, Message: "boom"}, {ID: "b", Succeeded: true}, {ID: "c/d", Failed: true, Message: "bang"}}},
			[]string{"Ready=False/HandlerFailed: Handler 'a' failed for good: boom\nHandler 'c/d' failed for good: bang", "-Reconciling",
				"Stalled=True/HandlerFailed: Handler 'a' failed for good: boom\nHandler 'c/d' failed for good: bang"}},
		{"a deletion that is done: nothing, the object goes", cycleState{Title: "Deletion", Done: true, Deleting: true, Handlers: []handlerState{{ID: "a", Succeeded: true}}}, nil},
		{"a deletion retrying", cycleState{Title: "Deletion", Deleting: true, Handlers: []handlerState{{ID: "a", Retries: 1, Message: "wait"}}},
			[]string{"Ready=False/HandlerRetrying: Handler 'a' is retrying: wait",
				"Reconciling=True/HandlerRetrying: Handler 'a' is retrying: wait", "-Stalled"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := brief(conditionsFor(tc.cycle)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("For:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestFailuresReadsFailedMessageBack(t *testing.T) {
	in := []Failure{{ID: "a", Message: "boom: it failed for good: twice"}, {ID: "sub/child", Message: "x"}}
	if got := FailuresOf(FailedMessage(in)); !reflect.DeepEqual(got, in) {
		t.Errorf("Failures(FailedMessage) = %v, want %v", got, in)
	}
	if got := FailuresOf("Creation handled: 1 handler succeeded."); got != nil {
		t.Errorf("Failures of another message = %v, want none", got)
	}
	long := strings.Repeat("é", maxMessage)
	msg := FailedMessage([]Failure{{ID: "a", Message: long}})
	if len(msg) > maxMessage/4+len("Handler 'a"+failedInfix) || !strings.HasSuffix(msg, "...") {
		t.Errorf("a long error is not cut: %d bytes", len(msg))
	}
}

var (
	t0 = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
)

func cond(typ, status, reason, msg string, gen int64, at time.Time) map[string]any {
	m := map[string]any{"type": typ, "status": status, "reason": reason, "message": msg, "lastTransitionTime": at.Format(time.RFC3339)}
	if gen != 0 {
		m["observedGeneration"] = gen
	}
	return m
}

func object(gen int64, conds ...any) map[string]any {
	body := map[string]any{"metadata": map[string]any{"name": "x", "generation": gen}}
	if conds != nil {
		body["status"] = map[string]any{"conditions": conds, "other": "kept"}
	}
	return body
}

func TestWrite(t *testing.T) {
	ready := func(s metav1.ConditionStatus, reason, msg string) patch.ConditionChange {
		return patch.ConditionChange{Type: ConditionReady, Status: string(s), Reason: reason, Message: msg}
	}
	foreign := map[string]any{"type": "Synced", "status": "True", "severity": "Info", "lastTransitionTime": "2020-01-01T00:00:00Z"}
	cases := []struct {
		name    string
		body    map[string]any
		before  []any // status.conditions already in the patch, if any
		changes []patch.ConditionChange
		want    any // status.conditions in the patch; nil: none
	}{
		{"nothing to change", object(1), nil, nil, nil},
		{"a new condition: now, and the object's generation", object(3), nil,
			[]patch.ConditionChange{ready(metav1.ConditionTrue, "HandlersSucceeded", "ok")},
			[]any{cond(ConditionReady, "True", "HandlersSucceeded", "ok", 3, t1)}},
		{"unchanged: no write at all", object(3, cond(ConditionReady, "True", "HandlersSucceeded", "ok", 3, t0)), nil,
			[]patch.ConditionChange{ready(metav1.ConditionTrue, "HandlersSucceeded", "ok")}, nil},
		{"same status, new generation: the time stays", object(4, cond(ConditionReady, "True", "HandlersSucceeded", "ok", 3, t0)), nil,
			[]patch.ConditionChange{ready(metav1.ConditionTrue, "HandlersSucceeded", "ok")},
			[]any{cond(ConditionReady, "True", "HandlersSucceeded", "ok", 4, t0)}},
		{"same status, new message: the time stays", object(3, cond(ConditionReady, "False", "HandlerRetrying", "a", 3, t0)), nil,
			[]patch.ConditionChange{ready(metav1.ConditionFalse, "HandlerRetrying", "b")},
			[]any{cond(ConditionReady, "False", "HandlerRetrying", "b", 3, t0)}},
		{"a new status: the time moves", object(3, cond(ConditionReady, "False", "HandlerRetrying", "a", 3, t0)), nil,
			[]patch.ConditionChange{ready(metav1.ConditionTrue, "HandlersSucceeded", "ok")},
			[]any{cond(ConditionReady, "True", "HandlersSucceeded", "ok", 3, t1)}},
		{"removal of an absent type: no write", object(3, cond(ConditionReady, "True", "HandlersSucceeded", "ok", 3, t0)), nil,
			[]patch.ConditionChange{{Type: ConditionStalled, Remove: true}}, nil},
		{"removal keeps the others and their order", object(3, foreign, cond(ConditionStalled, "True", "HandlerFailed", "x", 3, t0), cond(ConditionReady, "True", "HandlersSucceeded", "ok", 3, t0)), nil,
			[]patch.ConditionChange{{Type: ConditionStalled, Remove: true}},
			[]any{foreign, cond(ConditionReady, "True", "HandlersSucceeded", "ok", 3, t0)}},
		{"removal of the last one: an empty list", object(3, cond(ConditionStalled, "True", "HandlerFailed", "x", 3, t0)), nil,
			[]patch.ConditionChange{{Type: ConditionStalled, Remove: true}}, []any{}},
		{"a handler's own generation and time are kept", object(3), nil,
			[]patch.ConditionChange{{Type: "Synced", Status: "True", Reason: "Done", ObservedGeneration: 2, LastTransitionTime: t0}},
			[]any{cond("Synced", "True", "Done", "", 2, t0)}},
		{"the list already in the patch is the current one", object(3, cond(ConditionReady, "True", "HandlersSucceeded", "ok", 3, t0)),
			[]any{cond("Synced", "True", "Done", "", 3, t0)},
			[]patch.ConditionChange{ready(metav1.ConditionTrue, "HandlersSucceeded", "ok")},
			[]any{cond("Synced", "True", "Done", "", 3, t0), cond(ConditionReady, "True", "HandlersSucceeded", "ok", 3, t1)}},
		{"the last change of a type wins", object(1), nil,
			[]patch.ConditionChange{ready(metav1.ConditionFalse, "HandlerRetrying", "a"), ready(metav1.ConditionTrue, "HandlersSucceeded", "ok")},
			[]any{cond(ConditionReady, "True", "HandlersSucceeded", "ok", 1, t1)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &patch.Patch{}
			if tc.before != nil {
				p.Status()["conditions"] = tc.before
			}
			for _, ch := range tc.changes {
				p.ChangeCondition(ch)
			}
			WriteConditions(tc.body, p, t1.Add(400*time.Millisecond))
			status, _ := p.Map()["status"].(map[string]any)
			got := status["conditions"]
			if tc.want == nil && tc.before == nil && !p.IsEmpty() {
				t.Errorf("the patch is %v, want empty", p.Map())
			}
			if tc.want != nil && !reflect.DeepEqual(normalize(got), normalize(tc.want)) {
				t.Errorf("conditions:\n got %v\nwant %v", got, tc.want)
			}
			if len(p.Conditions()) != 0 {
				t.Errorf("changes are left waiting: %v", p.Conditions())
			}
		})
	}
}

// normalize makes numbers comparable whatever their Go type.
func normalize(v any) any {
	switch t := v.(type) {
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = normalize(x)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, x := range t {
			out[k] = normalize(x)
		}
		return out
	case int:
		return int64(t)
	}
	return v
}

func TestWriteLeavesTheBodyAlone(t *testing.T) {
	body := object(2, cond(ConditionStalled, "True", "HandlerFailed", "x", 2, t0), cond(ConditionReady, "False", "HandlerFailed", "x", 2, t0))
	p := &patch.Patch{}
	for _, ch := range conditionsFor(cycleState{Title: "Creation", Done: true, Handlers: []handlerState{{ID: "a", Succeeded: true}}}) {
		p.ChangeCondition(ch)
	}
	WriteConditions(body, p, t1)
	if got := len(body["status"].(map[string]any)["conditions"].([]any)); got != 2 {
		t.Errorf("the body's list has %d entries, want its 2", got)
	}
	if c, _ := FindCondition(body, ConditionStalled); c.Status != "True" {
		t.Errorf("the body's Stalled is %v, want it unchanged", c)
	}
	c, ok := FindCondition(p.Apply(body), ConditionReady)
	if !ok || c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Time.Equal(t1) || c.ObservedGeneration != 2 {
		t.Errorf("after the patch, Ready is %+v", c)
	}
	if _, ok := FindCondition(p.Apply(body), ConditionStalled); ok {
		t.Error("after the patch, Stalled is still there")
	}
}

// deferConditions keeps a list back only when it is all the patch has for
// status and tells nothing new: the framework's types keep their statuses,
// and the handlers' own are unchanged.
func TestDefer(t *testing.T) {
	handled := object(3, cond(ConditionReady, "True", "HandlersSucceeded", "Creation handled", 3, t0))
	retrying := object(3, cond(ConditionReady, "False", "HandlerRetrying", "a", 3, t0), cond(ConditionReconciling, "True", "HandlerRetrying", "a", 3, t0))
	synced := func(msg string) any { return cond("Synced", "True", "UpstreamSynced", msg, 3, t0) }
	cases := []struct {
		name   string
		body   map[string]any
		status map[string]any // the patch's status
		defer_ bool
	}{
		{"an update handled: only the message and generation move", handled,
			map[string]any{"conditions": []any{cond(ConditionReady, "True", "HandlersSucceeded", "Updating handled", 4, t0)}}, true},
		{"a retry's new error is news", retrying,
			map[string]any{"conditions": []any{cond(ConditionReady, "False", "HandlerRetrying", "b", 3, t0), cond(ConditionReconciling, "True", "HandlerRetrying", "b", 3, t0)}}, false},
		{"a handler's own condition, unchanged, stays back with Ready", object(3, cond(ConditionReady, "True", "HandlersSucceeded", "x", 3, t0), synced("same")),
			map[string]any{"conditions": []any{cond(ConditionReady, "True", "HandlersSucceeded", "y", 4, t0), synced("same")}}, true},
		{"Ready turns False", handled,
			map[string]any{"conditions": []any{cond(ConditionReady, "False", "HandlerRetrying", "a", 3, t1)}}, false},
		{"Reconciling appears", handled,
			map[string]any{"conditions": []any{cond(ConditionReady, "True", "HandlersSucceeded", "x", 3, t0), cond(ConditionReconciling, "True", "HandlersPending", "x", 3, t1)}}, false},
		{"Reconciling goes", retrying,
			map[string]any{"conditions": []any{cond(ConditionReady, "False", "HandlerRetrying", "a", 3, t0)}}, false},
		{"the first conditions", object(1),
			map[string]any{"conditions": []any{cond(ConditionReady, "True", "HandlersSucceeded", "x", 1, t1)}}, false},
		{"a handler's own condition changes", object(3, cond(ConditionReady, "True", "HandlersSucceeded", "x", 3, t0), synced("old")),
			map[string]any{"conditions": []any{cond(ConditionReady, "True", "HandlersSucceeded", "x", 4, t0), synced("new")}}, false},
		{"status carries more: the list goes along", handled,
			map[string]any{"create_fn": map[string]any{"ok": true}, "conditions": []any{cond(ConditionReady, "True", "HandlersSucceeded", "Updating handled", 4, t0)}}, false},
		{"no list in the patch", handled, map[string]any{"create_fn": "x"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &patch.Patch{}
			for k, v := range tc.status {
				p.Status()[k] = v
			}
			p.Meta()["annotations"] = map[string]any{"x": "y"}
			if got := deferConditions(tc.body, p); got != tc.defer_ {
				t.Fatalf("Defer = %v, want %v", got, tc.defer_)
			}
			_, hasStatus := p.Map()["status"]
			if hasStatus == tc.defer_ {
				t.Errorf("status in the patch after Defer: %v, want %v", hasStatus, !tc.defer_)
			}
			if _, ok := p.Map()["metadata"]; !ok {
				t.Errorf("Defer took more than the status: %v", p.Map())
			}
		})
	}
}

// WriteConditionsOrDefer decides the common case without merging
// (staysHandled) and must leave the patch as WriteConditions and then
// deferConditions do, whatever the list holds.
func TestWriteOrDeferIsWriteThenDefer(t *testing.T) {
	ready := func(msg string, gen int64) any { return cond(ConditionReady, "True", ReasonSucceeded, msg, gen, t0) }
	with := func(c any, kv ...any) any {
		m := map[string]any{}
		for k, v := range c.(map[string]any) {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	handled := conditionsFor(cycleState{Title: "Update", Done: true, Handlers: []handlerState{{ID: "a", Succeeded: true}}})
	retrying := conditionsFor(cycleState{Title: "Update", Handlers: []handlerState{{ID: "a", Retries: 1, Message: "no"}}})
	foreign := map[string]any{"type": "Synced", "status": "True", "severity": "Info", "weight": 1.5, "lastTransitionTime": "2020-01-01T00:00:00Z"}
	cases := []struct {
		name    string
		body    map[string]any
		status  map[string]any // the patch's status before, if any
		changes []patch.ConditionChange
		quick   bool // decided without merging
	}{
		{"an update handled", object(4, ready("Creation handled: 1 handler succeeded.", 3)), nil, handled, true},
		{"nothing moves at all", object(3, ready("Update handled: 1 handler succeeded.", 3)), nil, handled, true},
		{"a foreign condition with keys of its own", object(4, foreign, ready("x", 3)), nil, handled, true},
		{"a generation as a float", object(4, with(ready("x", 0), "observedGeneration", 3.0)), nil, handled, true},
		{"no transition time", object(4, with(ready("x", 3), "lastTransitionTime", nil)), nil, handled, true},
		{"the removal of a type not there", object(4, ready("x", 3)), nil, append(handled, patch.ConditionChange{Type: "Synced", Remove: true}), true},
		{"no changes", object(4, ready("x", 3)), nil, nil, true},
		{"a retry", object(4, ready("x", 3)), nil, retrying, false},
		{"Reconciling goes", object(4, ready("x", 3), cond(ConditionReconciling, "True", ReasonPending, "x", 3, t0)), nil, handled, false},
		{"Ready was False", object(4, cond(ConditionReady, "False", ReasonPending, "x", 3, t0)), nil, handled, false},
		{"no list yet", object(1), nil, handled, false},
		{"status in the patch", object(4, ready("x", 3)), map[string]any{"create_fn": "x"}, handled, false},
		{"an empty status in the patch", object(4, ready("x", 3)), map[string]any{}, handled, false},
		{"a list in the patch", object(4, ready("x", 3)), map[string]any{"conditions": []any{ready("y", 4)}}, handled, false},
		{"a handler's own change", object(4, ready("x", 3)), nil, append(handled, patch.ConditionChange{Type: "Synced", Status: "True", Reason: "Done"}), false},
		{"two Readys, the second False", object(4, ready("x", 3), cond(ConditionReady, "False", ReasonPending, "x", 3, t0)), nil, handled, false},
		{"two of a foreign type that differ", object(4, ready("x", 3), foreign, with(foreign, "status", "False")), nil, handled, false},
		{"a time that is not RFC 3339", object(4, with(ready("x", 3), "lastTransitionTime", "yesterday")), nil, handled, false},
		{"a generation that is no integer", object(4, with(ready("x", 3), "observedGeneration", 3.5)), nil, handled, false},
		{"a generation as a string", object(4, with(ready("x", 3), "observedGeneration", "3")), nil, handled, false},
		{"a status not a string", object(4, with(ready("x", 3), "status", true)), nil, handled, false},
		{"a key that encoding/json takes for status", object(4, with(ready("x", 3), "Status", "False")), nil, handled, false},
		{"a key folded to status (long s)", object(4, with(ready("x", 3), "ſtatus", "False")), nil, handled, false},
		{"a foreign key with a tree", object(4, ready("x", 3), with(foreign, "details", map[string]any{"a": "b"})), nil, handled, false},
		{"an entry without a type", object(4, ready("x", 3), map[string]any{"status": "True"}), nil, handled, false},
		{"an entry not a map", object(4, ready("x", 3), "Ready"), nil, handled, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mk := func() *patch.Patch {
				p := &patch.Patch{}
				if tc.status != nil {
					st := p.Status()
					for k, v := range tc.status {
						st[k] = v
					}
				}
				for _, ch := range tc.changes {
					p.ChangeCondition(ch)
				}
				return p
			}
			if got := staysHandled(tc.body, mk()); got != tc.quick {
				t.Errorf("staysHandled = %v, want %v", got, tc.quick)
			}
			want, got := mk(), mk()
			WriteConditions(tc.body, want, t1)
			deferConditions(tc.body, want)
			WriteConditionsOrDefer(tc.body, got, t1)
			if !reflect.DeepEqual(got.Map(), want.Map()) {
				t.Errorf("WriteOrDefer leaves\n %v\nWrite and Defer\n %v", got.Map(), want.Map())
			}
			if len(got.Conditions()) != 0 {
				t.Errorf("changes are left waiting: %v", got.Conditions())
			}
		})
	}
}
