package handling

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/patch"
)

// The framework's status.conditions (the metav1.Condition shape) on the
// objects it handles, so that kubectl, `kubectl wait --for=condition=Ready`
// and kstatus-based tools (Flux, kpt, cli-utils) can tell a handled object
// from one whose handlers retry or have failed for good. Kopf writes no
// conditions (docs/kopf-compatibility.md, persistence-conditions);
// docs/conditions.md says what each condition means.
//
// conditionsFor works out the framework's own conditions from the state of
// a cycle (Cycle.setConditions). Conditions are a list, and a merge patch
// replaces a list whole: changes (the framework's and the handlers',
// patch.Patch.ChangeCondition) wait in the patch until whoever sends it
// merges them into the object's current list (WriteConditions), the
// reactor as a rule.
//
// Everything in this file is pure: no I/O, no clock, no logging.

// The condition types the framework keeps. They are kstatus's: Ready is the
// summary that `kubectl wait` and controller-runtime's and Flux's users look
// for; Reconciling and Stalled have the "abnormal-true" polarity kstatus
// reads (an object with Reconciling=True is in progress, with Stalled=True
// failed), and are present only while true.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// The reasons of the framework's conditions.
const (
	// ReasonSucceeded: every handler of the cause succeeded (Ready=True).
	ReasonSucceeded = "HandlersSucceeded"
	// ReasonPending: handlers of the cause are yet to run or to finish
	// (Reconciling=True, Ready=False).
	ReasonPending = "HandlersPending"
	// ReasonRetrying: a handler failed temporarily and will be retried
	// (Reconciling=True, Ready=False).
	ReasonRetrying = "HandlerRetrying"
	// ReasonFailed: a handler failed permanently; the cause is done with
	// it (Stalled=True, Ready=False) until the object changes.
	ReasonFailed = "HandlerFailed"
)

// handlerState is one handler's state in a cycle, as its progress record has
// it.
type handlerState struct {
	ID        string
	Succeeded bool
	Failed    bool
	// Retries counts the attempts made.
	Retries int
	// Message is the record's: the error of the last attempt that failed.
	Message string
}

// cycleState is the state of a handling cycle after one of its passes.
type cycleState struct {
	// Title names the cause: "Creation", "Update", ...
	Title string
	// Done: every handler has finished (succeeded or failed for good).
	Done bool
	// Deleting: the cause is the object's deletion.
	Deleting bool
	// Handlers are the cause's handlers, in registration order.
	Handlers []handlerState
}

// conditionsFor returns the framework's condition changes for the state of a
// cycle:
//
//   - all handlers succeeded: Ready=True (HandlersSucceeded); Reconciling
//     and Stalled are removed;
//   - done, some failed permanently: Ready=False and Stalled=True
//     (HandlerFailed), the message naming each failed handler and its
//     error; Reconciling is removed;
//   - not done: Ready=False and Reconciling=True, HandlerRetrying with the
//     retrying handler's id and error, or HandlersPending; Stalled is
//     removed.
//
// A deletion that is done writes nothing: the object is on its way out.
// A cycle without handlers writes nothing: nothing was handled.
func conditionsFor(c cycleState) []patch.ConditionChange {
	if len(c.Handlers) == 0 || c.Deleting && c.Done {
		return nil
	}
	set := func(t string, s metav1.ConditionStatus, reason, msg string) patch.ConditionChange {
		return patch.ConditionChange{Type: t, Status: string(s), Reason: reason, Message: msg}
	}
	remove := func(t string) patch.ConditionChange {
		return patch.ConditionChange{Type: t, Remove: true}
	}
	succeeded, finished := 0, 0
	var failures []Failure
	var retrying *handlerState
	for i, h := range c.Handlers {
		switch {
		case h.Succeeded:
			succeeded++
			finished++
		case h.Failed:
			finished++
			failures = append(failures, Failure{ID: h.ID, Message: h.Message})
		case retrying == nil && h.Retries > 0 && h.Message != "":
			retrying = &c.Handlers[i]
		}
	}
	switch {
	case c.Done && len(failures) > 0:
		msg := FailedMessage(failures)
		return []patch.ConditionChange{set(ConditionReady, metav1.ConditionFalse, ReasonFailed, msg), remove(ConditionReconciling), set(ConditionStalled, metav1.ConditionTrue, ReasonFailed, msg)}
	case c.Done:
		// Joined rather than formatted: the message of every pass of the
		// steady state, mostly kept back (deferConditions) once made.
		msg := c.Title + " handled: " + strconv.Itoa(succeeded) + " " + plural(succeeded, "handler") + " succeeded."
		return []patch.ConditionChange{set(ConditionReady, metav1.ConditionTrue, ReasonSucceeded, msg), remove(ConditionReconciling), remove(ConditionStalled)}
	}
	reason := ReasonPending
	msg := fmt.Sprintf("%s in progress: %d of %d handlers finished.", c.Title, finished, len(c.Handlers))
	if retrying != nil {
		// No count of attempts: a handler that keeps failing the same way
		// leaves the condition as it is, and costs no write.
		reason = ReasonRetrying
		msg = fmt.Sprintf("Handler '%s' is retrying: %s", retrying.ID, oneLine(retrying.Message))
	}
	return []patch.ConditionChange{set(ConditionReady, metav1.ConditionFalse, reason, msg), set(ConditionReconciling, metav1.ConditionTrue, reason, msg), remove(ConditionStalled)}
}

// Failure is a handler that failed permanently, as a HandlerFailed
// condition's message names it.
type Failure struct {
	ID      string
	Message string
}

const failedInfix = "' failed for good: "

// FailedMessage is the message of the HandlerFailed conditions: a line per
// failed handler, "Handler 'id' failed for good: error" (unlike the
// log's "failed permanently", so that the patch logged at DEBUG is not
// taken for the log line).
func FailedMessage(fs []Failure) string {
	lines := make([]string, len(fs))
	for i, f := range fs {
		lines[i] = "Handler '" + f.ID + failedInfix + oneLine(f.Message)
	}
	return truncate(strings.Join(lines, "\n"), maxMessage)
}

// FailuresOf reads the failed handlers back from a HandlerFailed condition's
// message (FailedMessage): `kopfgo inspect` reports them after the cycle's
// end has purged their progress records.
func FailuresOf(message string) []Failure {
	var fs []Failure
	for line := range strings.SplitSeq(message, "\n") {
		rest, ok := strings.CutPrefix(line, "Handler '")
		if !ok {
			continue
		}
		id, msg, ok := strings.Cut(rest, failedInfix)
		if ok {
			fs = append(fs, Failure{ID: id, Message: msg})
		}
	}
	return fs
}

// FindCondition returns the condition of the type in body's status.conditions.
func FindCondition(body map[string]any, conditionType string) (metav1.Condition, bool) {
	list, _ := dicts.Get(body, []string{"status", "conditions"})
	items, _ := list.([]any)
	if i := index(items, conditionType); i >= 0 {
		return decode(items[i])
	}
	return metav1.Condition{}, false
}

// WriteConditions merges the condition changes waiting in p
// (patch.Patch.ChangeCondition) into the object's current list, as
// meta.SetStatusCondition does, and puts the list into p if it differs from
// body's; changes that change nothing write nothing. The list in p, if p sets
// one already, is the current list; otherwise body's. ObservedGeneration 0
// becomes body's generation; LastTransitionTime becomes now where Status
// changes. Entries of types not changed stay as they are, whatever their
// shape.
func WriteConditions(body map[string]any, p *patch.Patch, now time.Time) {
	changes := p.TakeConditions()
	if len(changes) == 0 {
		return
	}
	cur, inPatch := dicts.Get(p.Map(), []string{"status", "conditions"})
	if !inPatch {
		cur, _ = dicts.Get(body, []string{"status", "conditions"})
	}
	old, _ := cur.([]any)
	items := append([]any(nil), old...)
	generation := generationOf(body)
	stamp := metav1.NewTime(now.UTC().Truncate(time.Second))
	changed := false
	for _, ch := range changes {
		i := index(items, ch.Type)
		if ch.Remove {
			if i >= 0 {
				items = append(items[:i], items[i+1:]...)
				changed = true
			}
			continue
		}
		c := metav1.Condition{Type: ch.Type, Status: metav1.ConditionStatus(ch.Status), Reason: ch.Reason, Message: ch.Message,
			ObservedGeneration: ch.ObservedGeneration, LastTransitionTime: metav1.NewTime(ch.LastTransitionTime)}
		if c.ObservedGeneration == 0 {
			c.ObservedGeneration = generation
		}
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = stamp
		}
		if i < 0 {
			items = append(items, encode(c))
			changed = true
			continue
		}
		prev, ok := decode(items[i])
		next := []metav1.Condition{prev}
		if !ok {
			next = nil
		}
		meta.SetStatusCondition(&next, c)
		if ok && same(prev, next[0]) {
			continue
		}
		items[i] = encode(next[0])
		changed = true
	}
	if changed {
		if items == nil {
			items = []any{}
		}
		p.Status()["conditions"] = items
	}
}

// deferConditions takes the condition list out of p when writing it would be a
// request of its own and would tell no tool anything new: on a resource
// with the status subresource, where p has nothing else for status, the
// object stays handled (Ready stays True, only its message, reason or
// observedGeneration would move, as after an update handled with success)
// and every other type (a handler's own) is unchanged. The list then waits
// for the next status write. A condition that appears, goes or changes its
// status is written at once (what kstatus and kubectl wait read), and so
// is any news of a cycle in progress or failed (a retry's new error).
// Reports whether it took the list out.
func deferConditions(body map[string]any, p *patch.Patch) bool {
	st, _ := p.Map()["status"].(map[string]any)
	next, ok := st["conditions"].([]any)
	if !ok || len(st) != 1 {
		return false
	}
	cur, _ := dicts.Get(body, []string{"status", "conditions"})
	prev, _ := cur.([]any)
	if len(prev) != len(next) {
		return false
	}
	for _, it := range next {
		n, ok := decode(it)
		if !ok {
			return false
		}
		i := index(prev, n.Type)
		if i < 0 {
			return false
		}
		o, ok := decode(prev[i])
		if !ok || o.Status != n.Status {
			return false
		}
		if n.Type == ConditionReconciling || n.Type == ConditionStalled || n.Type == ConditionReady && n.Status != metav1.ConditionTrue {
			return false // in progress or failed: its message is news
		}
		if !framework(n.Type) && !same(o, n) {
			return false
		}
	}
	delete(p.Map(), "status")
	return true
}

// WriteConditionsOrDefer is WriteConditions and then deferConditions, as a
// pass on a resource with the status subresource calls them. The common case,
// an object that stays handled (the changes set Ready True over a Ready that
// is True and remove types the list does not hold, and the patch has nothing
// for status), is told from the changes and the body's list as they are:
// WriteConditions would merge and encode a Ready that deferConditions then
// takes out again, decoding every entry of the list on the way, on every pass
// of every object. Anything else takes the long way, which decides it
// exactly.
func WriteConditionsOrDefer(body map[string]any, p *patch.Patch, now time.Time) {
	if staysHandled(body, p) {
		p.TakeConditions()
		return
	}
	WriteConditions(body, p, now)
	deferConditions(body, p)
}

// staysHandled reports whether WriteConditions and deferConditions would
// leave p with no status and no changes waiting, without merging anything: p
// has no status of its own; every change sets Ready True or removes a type
// the body's list does not hold; the list holds a Ready that is True; and
// every entry of the list is one deferConditions reads (plain), each type
// once, so that deferConditions' comparisons of the list with itself all
// hold.
func staysHandled(body map[string]any, p *patch.Patch) bool {
	if _, ok := p.Map()["status"]; ok {
		return false
	}
	cur, _ := dicts.Get(body, []string{"status", "conditions"})
	items, _ := cur.([]any)
	ready := false
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok || !plain(m) || index(items[:i], m["type"].(string)) >= 0 {
			return false
		}
		ready = ready || m["type"] == ConditionReady && m["status"] == string(metav1.ConditionTrue)
	}
	if !ready {
		return false
	}
	for _, ch := range p.Conditions() {
		switch {
		case ch.Remove && index(items, ch.Type) < 0:
		case !ch.Remove && ch.Type == ConditionReady && ch.Status == string(metav1.ConditionTrue):
		default:
			return false
		}
	}
	return true
}

// conditionFields are metav1.Condition's JSON names.
var conditionFields = [...]string{"type", "status", "reason", "message", "observedGeneration", "lastTransitionTime"}

// plain reports whether decode reads an entry as a condition, judged from
// its values rather than by encoding it: a non-empty type, the fields of
// their JSON types, a lastTransitionTime in RFC 3339, and other keys of
// scalar values that no field takes (encoding/json matches names without
// regard to case). False may be wrong; true is not.
func plain(m map[string]any) bool {
	if t, ok := m["type"].(string); !ok || t == "" {
		return false
	}
	for k, v := range m {
		switch k {
		case "type", "status", "reason", "message":
			if _, ok := v.(string); !ok && v != nil {
				return false
			}
		case "observedGeneration":
			if !integer(v) {
				return false
			}
		case "lastTransitionTime":
			if s, ok := v.(string); ok {
				if _, err := time.Parse(time.RFC3339, s); err != nil {
					return false
				}
			} else if v != nil {
				return false
			}
		default:
			for _, f := range conditionFields {
				if strings.EqualFold(k, f) {
					return false
				}
			}
			switch x := v.(type) {
			case nil, string, bool, int64, int:
			case float64:
				if math.IsInf(x, 0) || math.IsNaN(x) {
					return false
				}
			default:
				return false
			}
		}
	}
	return true
}

// integer reports whether v decodes into an int64 field.
func integer(v any) bool {
	switch n := v.(type) {
	case nil, int64, int:
		return true
	case float64:
		return n == math.Trunc(n) && math.Abs(n) < 1<<53
	}
	return false
}

// framework reports whether a condition type is one the framework keeps.
func framework(conditionType string) bool {
	return conditionType == ConditionReady || conditionType == ConditionReconciling || conditionType == ConditionStalled
}

func same(a, b metav1.Condition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message &&
		a.ObservedGeneration == b.ObservedGeneration && a.LastTransitionTime.Equal(&b.LastTransitionTime)
}

func index(items []any, conditionType string) int {
	for i, it := range items {
		if m, ok := it.(map[string]any); ok && m["type"] == conditionType {
			return i
		}
	}
	return -1
}

// decode reads one entry of a list; false if it is not a condition.
func decode(item any) (metav1.Condition, bool) {
	var c metav1.Condition
	raw, err := json.Marshal(item)
	if err != nil || json.Unmarshal(raw, &c) != nil || c.Type == "" {
		return metav1.Condition{}, false
	}
	return c, true
}

// encode turns a condition into the JSON tree a patch holds.
func encode(c metav1.Condition) any {
	m := map[string]any{
		"type":               c.Type,
		"status":             string(c.Status),
		"reason":             c.Reason,
		"message":            c.Message,
		"lastTransitionTime": c.LastTransitionTime.UTC().Format(time.RFC3339),
	}
	if c.ObservedGeneration != 0 {
		m["observedGeneration"] = c.ObservedGeneration
	}
	return m
}

func generationOf(body map[string]any) int64 {
	v, _ := dicts.Get(body, []string{"metadata", "generation"})
	switch n := v.(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case float64:
		return int64(n)
	case json.Number:
		g, _ := n.Int64()
		return g
	}
	return 0
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// maxMessage bounds a condition's message, as metav1.Condition's schema does.
const maxMessage = 32768

// oneLine is a handler's error on one line, at most a quarter of a
// message long, so that a few failed handlers fit in one message.
func oneLine(s string) string {
	return truncate(strings.ReplaceAll(s, "\n", " "), maxMessage/4)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n-3], "") + "..."
}
