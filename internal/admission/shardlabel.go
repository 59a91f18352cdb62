package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/kopfgo/kopfgo/internal/conventions"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/logging"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// ShardLabelID prefixes the ids of the built-in webhooks that label objects
// with their shard: "shard.kopfgo.dev/<resource>", one per served resource
// selector, apart from the ids derived from Go functions' names.
const ShardLabelID = conventions.ShardLabelPrefix

// ShardLabelling are the built-in mutating handlers of the sharding of
// this operator's name and this many shards: one per selector of the served resources, registered for
// CREATE, that give a new object the label of its shard (conventions.Shard
// of its namespace and name), so that the coordinating replica needs no
// write for it. They never reject: the webhooks' failurePolicy is Ignore,
// so that an operator out of reach blocks no creation, and an object
// created without the label is labelled by the coordinator, by the same
// rule. An object without a name yet (generateName: the API server makes
// the name after the mutating webhooks) is left to the coordinator too;
// a label already there is kept. inScope, when set, tells the namespaces
// the operator serves (a namespaced object of another is left alone).
// Run them after the user's handlers: the object they label is then the
// one the user's mutations made.
//
// A request to one of their webhooks is answered by the Engine from the
// objects' metadata alone (shardRule.answer); the handlers' Fn serves the
// requests that run every handler.
func ShardLabelling(operator string, shards int, selectors []resources.Selector, inScope func(namespace string) bool) []*handling.AdmissionHandler {
	rule := newShardRule(conventions.ShardLabel(operator), shards, inScope)
	fn := func(_ context.Context, a *handlers.Admission) error {
		// A label there, or one a handler before in the same request set
		// (a webhook that names no handler runs them all), is kept.
		_, has := a.Labels[rule.label]
		has = has || a.Patch.Has("metadata", "labels", rule.label)
		if v, ok := rule.value(a.Operation, a.Resource.Namespaced, a.Namespace, a.Name, has); ok {
			a.Patch.Labels()[rule.label] = v
		}
		return nil
	}
	hs := make([]*handling.AdmissionHandler, 0, len(selectors))
	for _, sel := range selectors {
		h := &handling.AdmissionHandler{Kind: handlers.Mutating, Fn: fn, Operations: []string{"CREATE"}, IgnoreFailures: true, Builtin: rule}
		h.ID = ShardLabelID + "/" + sel.String()
		h.Selector = sel
		h.Resource = sel.String()
		hs = append(hs, h)
	}
	return hs
}

// shardRule is the shard labelling's rule, and the two JSON patches that
// apply it, written ahead but for the shard's number.
type shardRule struct {
	label   string
	shards  int
	inScope func(namespace string) bool
	// intoLabels adds the label to the labels there, newLabels adds the
	// labels with it; each is followed by the shard's number and its end.
	intoLabels, newLabels struct{ head, tail string }
}

func newShardRule(label string, shards int, inScope func(string) bool) *shardRule {
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	r := &shardRule{label: label, shards: shards, inScope: inScope}
	// jsondiff's order of an operation's fields, so that the patch is the
	// general path's to the byte.
	r.intoLabels.head = `[{"value":"`
	r.intoLabels.tail = `","op":"add","path":` + quote("/metadata/labels/"+pointerEscaper.Replace(label)) + `}]`
	r.newLabels.head = `[{"value":{` + quote(label) + `:"`
	r.newLabels.tail = `"},"op":"add","path":"/metadata/labels"}]`
	return r
}

// pointerEscaper escapes a key for a JSON pointer (RFC 6901).
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// value is the label an object gets, false for none: only at its
// creation, only with a name, only if it has no label yet, and only in a
// namespace served.
func (r *shardRule) value(operation string, namespaced bool, namespace, name string, labelled bool) (string, bool) {
	if operation != "CREATE" || name == "" || labelled {
		return "", false
	}
	if namespaced && r.inScope != nil && !r.inScope(namespace) {
		return "", false
	}
	return strconv.Itoa(conventions.Shard(namespace, name, r.shards)), true
}

// labelReview is a review as far as the shard label needs it: of its
// objects, the metadata that names them and their labels.
type labelReview = reviewOf[labelObject]

type labelObject struct {
	Metadata struct {
		Name         string            `json:"name"`
		GenerateName string            `json:"generateName"`
		Namespace    string            `json:"namespace"`
		UID          string            `json:"uid"`
		Labels       map[string]string `json:"labels"`
	} `json:"metadata"`
}

// answer answers a review addressed to the handler h of this rule alone,
// as the Engine's general path would (the same checks and statuses, the
// same patch) but without decoding the objects whole, running the handler
// through a Change, nor diffing the object with its patched copy: the
// label is one "add" (see the package's doc for what this saves).
func (r *shardRule) answer(ctx context.Context, e *Engine, h *handling.AdmissionHandler, data []byte) ([]byte, int, error) {
	var rv labelReview
	if err := json.Unmarshal(data, &rv); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("malformed AdmissionReview: %w", err)
	}
	res, err := checkReview(e, &rv)
	if err != nil {
		return nil, failed(err), err
	}
	a := rv.answer()
	rq := rv.Request
	if h.Serves(handling.AdmissionRequest{Webhook: h.ID, Resource: res, Operation: rq.Operation, SubResource: rq.SubResource}) {
		r.apply(ctx, e, h, res, &a.Response, rq)
	}
	resp, err := json.Marshal(a)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	return resp, http.StatusOK, nil
}

// apply is the handler's part of answer: the patch, if any, and the line.
func (r *shardRule) apply(ctx context.Context, e *Engine, h *handling.AdmissionHandler, res resources.Resource, resp *reviewResponse, rq *requestOf[labelObject]) {
	obj := rq.Object
	if obj == nil {
		obj = rq.OldObject
	}
	meta := &obj.Metadata
	_, has := meta.Labels[r.label]
	if v, ok := r.value(rq.Operation, res.Namespaced, meta.Namespace, meta.Name, has); ok {
		add := r.intoLabels
		if meta.Labels == nil {
			add = r.newLabels
		}
		resp.Patch = append(append(append(make([]byte, 0, len(add.head)+len(v)+len(add.tail)), add.head...), v...), add.tail...)
		resp.PatchType = "JSONPatch"
	}
	if e.Logger.Enabled(ctx, slog.LevelDebug) {
		ref := refOf(res, meta.Name, meta.GenerateName, meta.UID, meta.Namespace)
		logging.WithObject(e.Logger, ref).Debug(fmt.Sprintf("Handler '%s' succeeded.", h.ID))
	}
}
