package admission

import (
	"context"
	"strconv"

	"github.com/kopfgo/kopfgo/internal/conventions"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
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
func ShardLabelling(operator string, shards int, selectors []resources.Selector, inScope func(namespace string) bool) []*handling.AdmissionHandler {
	label := conventions.ShardLabel(operator)
	fn := func(_ context.Context, a *handlers.Admission) error {
		if a.Operation != "CREATE" || a.Name == "" {
			return nil
		}
		// A label there, or one a handler before in the same request set
		// (a webhook that names no handler runs them all), is kept.
		if _, ok := a.Labels[label]; ok || a.Patch.Has("metadata", "labels", label) {
			return nil
		}
		if a.Resource.Namespaced && inScope != nil && !inScope(a.Namespace) {
			return nil
		}
		a.Patch.Labels()[label] = strconv.Itoa(conventions.Shard(a.Namespace, a.Name, shards))
		return nil
	}
	hs := make([]*handling.AdmissionHandler, 0, len(selectors))
	for _, sel := range selectors {
		h := &handling.AdmissionHandler{Kind: handlers.Mutating, Fn: fn, Operations: []string{"CREATE"}, IgnoreFailures: true}
		h.ID = ShardLabelID + "/" + sel.String()
		h.Selector = sel
		h.Resource = sel.String()
		hs = append(hs, h)
	}
	return hs
}
