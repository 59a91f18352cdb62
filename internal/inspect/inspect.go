package inspect

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/internal/conventions"
	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/persistence"
)

// Object states, from the least to the most advanced handling.
const (
	Fresh      = "fresh"       // never handled: no diff-base, no progress
	InProgress = "in-progress" // a cycle has unfinished handlers
	Delayed    = "delayed"     // a cycle waits for a handler's retry delay
	Failed     = "failed"      // a handler of the current cycle failed permanently
	Done       = "done"        // handled: the diff-base matches the object
	Changed    = "changed"     // handled before, changed since: a cycle is due
)

// Handler states.
const (
	HandlerSucceeded = "succeeded"
	HandlerFailed    = "failed"
	HandlerDelayed   = "delayed"
	HandlerRetrying  = "retrying" // failed temporarily, its delay is over
	HandlerRunning   = "running"  // started, neither finished nor delayed
)

// Options say where the operator keeps its state; the zero value means
// Kopf's defaults, which kopfgo shares.
type Options struct {
	// Prefix of the progress annotations; "" means "kopf.zalando.org".
	Prefix string
	// Finalizer; "" means "kopf.zalando.org/KopfFinalizerMarker".
	Finalizer string
	// DiffBase is the diff-base storage; nil means Kopf's default.
	DiffBase diffbase.Storage
	// StuckAfter: a handler delayed further than this, or a cycle started
	// longer ago than this, counts as stuck. 0 means 10 minutes.
	StuckAfter time.Duration
}

// DefaultFinalizer is Kopf's finalizer (persistence: finalizer).
const DefaultFinalizer = "kopf.zalando.org/KopfFinalizerMarker"

// Handler is one handler's persisted progress.
type Handler struct {
	ID           string     `json:"id"`
	State        string     `json:"state"`
	Cause        string     `json:"cause,omitempty"`
	Retries      int        `json:"retries"`
	Started      *time.Time `json:"started,omitempty"`
	Stopped      *time.Time `json:"stopped,omitempty"`
	DelayedUntil *time.Time `json:"delayedUntil,omitempty"`
	Message      string     `json:"message,omitempty"`
	// Storage is where the report comes from: "annotations" or "status"
	// (progress records), or "conditions" (a permanent failure of a cycle
	// that has ended, read from the Stalled condition).
	Storage string `json:"storage"`
}

// Object is the report on one object.
type Object struct {
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name"`
	State     string    `json:"state"`
	Cause     string    `json:"cause,omitempty"` // the cause of the cycle in progress
	Finalizer bool      `json:"finalizer"`
	Deleting  bool      `json:"deleting"`
	Handled   bool      `json:"handled"`       // a diff-base is stored
	Pending   bool      `json:"pendingChange"` // the diff-base differs from the essence
	Stuck     bool      `json:"stuck"`
	Why       string    `json:"why,omitempty"` // why it is stuck
	Handlers  []Handler `json:"handlers"`
	Problems  []string  `json:"problems,omitempty"` // corrupt records and the like
}

// Analyze reports on body as of now.
func Analyze(body map[string]any, now time.Time, o Options) Object {
	meta, _ := body["metadata"].(map[string]any)
	obj := Object{Handlers: []Handler{}}
	obj.Namespace, _ = meta["namespace"].(string)
	obj.Name, _ = meta["name"].(string)
	_, obj.Deleting = meta["deletionTimestamp"].(string)
	finalizer := o.Finalizer
	if finalizer == "" {
		finalizer = DefaultFinalizer
	}
	fins, _ := meta["finalizers"].([]any)
	for _, f := range fins {
		if f == finalizer {
			obj.Finalizer = true
		}
	}

	obj.Handlers = records(body, o, &obj.Problems)
	for i := range obj.Handlers {
		obj.Handlers[i].State = handlerState(obj.Handlers[i], now)
	}

	db := o.DiffBase
	if db == nil {
		db = diffbase.Default()
	}
	stored, err := db.Fetch(body)
	if err != nil {
		obj.Problems = append(obj.Problems, err.Error())
	}
	if stored != nil {
		obj.Handled = true
		obj.Pending = !dicts.Equal(stored, db.Build(body, watched(stored)))
	}
	if len(obj.Handlers) == 0 && obj.Handled && !obj.Pending {
		obj.Handlers = failedBefore(body)
	}
	obj.State, obj.Cause = objectState(obj)
	obj.Stuck, obj.Why = stuck(obj, now, o.StuckAfter)
	return obj
}

// watched guesses the extra fields of the essence that an operator's field
// handlers watch (status or metadata beyond labels and annotations), which
// inspect cannot know without the operator's code, from what the diff-base
// holds: a field there outside the default essence was put there by such a
// handler. Each stored leaf is one field, so that a watched status field
// that is unchanged does not make the object look changed.
func watched(stored map[string]any) [][]string {
	var paths [][]string
	var walk func(v any, path []string)
	walk = func(v any, path []string) {
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			for k, sub := range m {
				walk(sub, append(path[:len(path):len(path)], k))
			}
			return
		}
		paths = append(paths, path)
	}
	if status, ok := stored["status"]; ok {
		walk(status, []string{"status"})
	}
	if meta, ok := stored["metadata"].(map[string]any); ok {
		for k, v := range meta {
			if k != "labels" && k != "annotations" {
				walk(v, []string{"metadata", k})
			}
		}
	}
	return paths
}

// records reads every progress record on body: the annotations under the
// prefix (Kopf's and kopfgo's default storage) and the status records of
// Kopf's older status storage, which the smart storage still reads.
func records(body map[string]any, o Options, problems *[]string) []Handler {
	prefix := o.Prefix
	if prefix == "" {
		prefix = conventions.KnownPrefix
	}
	prefix += "/"
	meta, _ := body["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	var hs []Handler
	seen := map[string]bool{}      // handler ids
	seenValue := map[string]bool{} // V1 and V2 keys of one record hold one value
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		id, ok := strings.CutPrefix(key, prefix)
		if !ok || notRecord[id] {
			continue
		}
		value, _ := annotations[key].(string)
		if value == "" || value == "null" || seenValue[value] {
			continue
		}
		var r persistence.Record
		if err := r.UnmarshalJSON([]byte(value)); err != nil {
			*problems = append(*problems, fmt.Sprintf("annotation %s: %v", key, err))
			continue
		}
		seenValue[value] = true
		seen[id] = true
		hs = append(hs, fromRecord(id, &r, "annotations"))
	}

	// The status records, keyed by the verbatim handler id ("a/b"), which
	// the annotation keys spell "a.b".
	status := &persistence.StatusStorage{}
	progress, _ := nested(body, "status", "kopf", "progress").(map[string]any)
	ids := make([]string, 0, len(progress))
	for id := range progress {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if seen[id] || seen[strings.ReplaceAll(id, "/", ".")] {
			continue
		}
		r, err := status.Fetch(id, body)
		if err != nil {
			*problems = append(*problems, fmt.Sprintf("status.kopf.progress.%s: %v", id, err))
			continue
		}
		if r != nil {
			hs = append(hs, fromRecord(id, r, "status"))
		}
	}
	if hs == nil {
		hs = []Handler{}
	}
	return hs
}

// failedBefore reads the handlers that failed permanently in the object's
// last cycle from its Stalled condition (internal/handling's conditions):
// the cycle's end purges the progress records, as Kopf's does, and the
// condition is what remains of the failure. Without the framework's conditions (turned
// off, or a built-in kind) nothing remains, and the object reads as done.
func failedBefore(body map[string]any) []Handler {
	c, ok := handling.FindCondition(body, handling.ConditionStalled)
	if !ok || c.Status != "True" || c.Reason != handling.ReasonFailed {
		return []Handler{}
	}
	hs := []Handler{}
	for _, f := range handling.FailuresOf(c.Message) {
		at := c.LastTransitionTime.Time
		hs = append(hs, Handler{ID: f.ID, State: HandlerFailed, Message: f.Message, Storage: "conditions", Stopped: &at})
	}
	return hs
}

// notRecord are the keys under the prefix that hold no progress record.
var notRecord = map[string]bool{
	"last-handled-configuration": true,
	"touch-dummy":                true,
	"kopf-managed":               true,
}

func nested(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}

func fromRecord(id string, r *persistence.Record, storage string) Handler {
	return Handler{
		ID: id, Cause: r.Purpose, Retries: r.Retries, Message: r.Message, Storage: storage,
		Started: r.Started, Stopped: r.Stopped, DelayedUntil: r.Delayed,
		State: stateOf(r),
	}
}

// stateOf is the record's own state, before the clock is consulted.
func stateOf(r *persistence.Record) string {
	switch {
	case r.Success:
		return HandlerSucceeded
	case r.Failure:
		return HandlerFailed
	}
	return HandlerRunning
}

func handlerState(h Handler, now time.Time) string {
	if h.State != HandlerRunning {
		return h.State
	}
	switch {
	case h.DelayedUntil != nil && h.DelayedUntil.After(now):
		return HandlerDelayed
	case h.Retries > 0:
		return HandlerRetrying
	}
	return HandlerRunning
}

func objectState(obj Object) (state, cause string) {
	failed, delayed, unfinished := false, false, false
	for _, h := range obj.Handlers {
		if cause == "" {
			cause = h.Cause
		}
		switch h.State {
		case HandlerFailed:
			failed = true
		case HandlerDelayed:
			delayed, unfinished = true, true
		case HandlerRetrying, HandlerRunning:
			unfinished = true
		}
	}
	switch {
	case failed:
		return Failed, cause
	case delayed:
		return Delayed, cause
	case unfinished || len(obj.Handlers) > 0:
		// Finished records stay until the whole cycle is done.
		return InProgress, cause
	case !obj.Handled:
		return Fresh, ""
	case obj.Pending:
		return Changed, ""
	}
	return Done, ""
}

// stuck says whether the object needs a human: a handler failed for good,
// or waits longer than after, or a cycle has been going on longer than after.
func stuck(obj Object, now time.Time, after time.Duration) (bool, string) {
	if after <= 0 {
		after = 10 * time.Minute
	}
	for _, h := range obj.Handlers {
		switch {
		case h.State == HandlerFailed:
			return true, fmt.Sprintf("handler %s failed: %s", h.ID, h.Message)
		case h.State == HandlerDelayed && h.DelayedUntil.Sub(now) > after:
			return true, fmt.Sprintf("handler %s is delayed until %s", h.ID, h.DelayedUntil.UTC().Format(time.RFC3339))
		case h.State != HandlerSucceeded && h.Started != nil && now.Sub(*h.Started) > after:
			return true, fmt.Sprintf("handler %s started %s ago and has not finished (%d retries)", h.ID, now.Sub(*h.Started).Round(time.Second), h.Retries)
		}
	}
	return false, ""
}

// JSON encodes reports as the command prints them.
func JSON(objs []Object) ([]byte, error) {
	if objs == nil {
		objs = []Object{}
	}
	b, err := json.MarshalIndent(objs, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cannot encode the reports: %w", err)
	}
	return append(b, '\n'), nil
}

// Table writes reports as a table: one line per handler, or one line for an
// object without handler records.
func Table(w io.Writer, objs []Object, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tSTATE\tCAUSE\tFINALIZER\tPENDING\tHANDLER\tHANDLER-STATE\tRETRIES\tDELAYED\tMESSAGE")
	for _, o := range objs {
		ns := o.Namespace
		if ns == "" {
			ns = "-"
		}
		state := o.State
		if o.Deleting {
			state += ",deleting"
		}
		if o.Stuck {
			state += ",stuck"
		}
		prefix := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", ns, o.Name, state, dash(o.Cause), yesNo(o.Finalizer), yesNo(o.Pending))
		if len(o.Handlers) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%s\n", prefix, dash(o.Why))
			continue
		}
		for _, h := range o.Handlers {
			delayed := "-"
			if h.DelayedUntil != nil {
				delayed = h.DelayedUntil.UTC().Format(time.RFC3339)
				if d := h.DelayedUntil.Sub(now); d > 0 {
					delayed += fmt.Sprintf(" (in %s)", d.Round(time.Second))
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", prefix, h.ID, h.State, h.Retries, delayed, dash(oneLine(h.Message)))
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("cannot write the table: %w", err)
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
