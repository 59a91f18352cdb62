// Package filtering registers creation handlers with every kind of filter:
// labels and annotations with exact values, presence, absence and
// callbacks; When callbacks; field values; and an update handler on a
// field's change from one value to another. Run:
//
//	kopfgo run ./examples/11-filtering-handlers
package filtering

import (
	"context"
	"time"

	"github.com/kopfgo/kopfgo"
)

const kex = "kopfexamples"

func Register(r kopfgo.Registrar) {
	r.Create(kex, logs("Label is matching."), kopfgo.ID("create_with_labels_matching"),
		kopfgo.Labels{"somelabel": "somevalue"})
	r.Create(kex, logs("Label is present."), kopfgo.ID("create_with_labels_present"),
		kopfgo.Labels{"somelabel": kopfgo.Present})
	r.Create(kex, logs("Label is absent."), kopfgo.ID("create_with_labels_absent"),
		kopfgo.Labels{"nonexistent": kopfgo.Absent})
	// Kopf's callbacks (say_yes, say_no) see the value and the spec; a
	// kopfgo value callback sees the value only, so the check of the spec
	// goes to When, which runs after all other filters: the same verdict.
	r.Create(kex, logs("Label callback matching."), kopfgo.ID("create_with_labels_callback_matching"),
		kopfgo.Labels{"somelabel": sayYes}, kopfgo.When(hasField))

	r.Create(kex, logs("Annotation is matching."), kopfgo.ID("create_with_annotations_matching"),
		kopfgo.Annotations{"someannotation": "somevalue"})
	r.Create(kex, logs("Annotation is present."), kopfgo.ID("create_with_annotations_present"),
		kopfgo.Annotations{"someannotation": kopfgo.Present})
	r.Create(kex, logs("Annotation is absent."), kopfgo.ID("create_with_annotations_absent"),
		kopfgo.Annotations{"nonexistent": kopfgo.Absent})
	r.Create(kex, logs("Annotation callback mismatch."), kopfgo.ID("create_with_annotations_callback_matching"),
		kopfgo.Annotations{"someannotation": sayYes}, kopfgo.When(hasNotThisValue))

	r.Create(kex, logs("Filter satisfied."), kopfgo.ID("create_with_filter_satisfied"),
		kopfgo.When(func(o *kopfgo.Object) bool { return true }))
	r.Create(kex, logs("Filter not satisfied."), kopfgo.ID("create_with_filter_not_satisfied"),
		kopfgo.When(func(o *kopfgo.Object) bool { return false }))

	r.Create(kex, logs("Field value is satisfied."), kopfgo.ID("create_with_field_value_satisfied"),
		kopfgo.Field("spec.field"), kopfgo.Value("value"))
	r.Create(kex, logs("Field value is not satisfied."), kopfgo.ID("create_with_field_value_not_satisfied"),
		kopfgo.Field("spec.field"), kopfgo.Value("something-else"))
	r.Create(kex, logs("Field presence is satisfied."), kopfgo.ID("create_with_field_presence_satisfied"),
		kopfgo.Field("spec.field"), kopfgo.Value(kopfgo.Present))
	r.Create(kex, logs("Field presence is not satisfied."), kopfgo.ID("create_with_field_presence_not_satisfied"),
		kopfgo.Field("spec.inexistent"), kopfgo.Value(kopfgo.Present))

	r.Update(kex, logs("Field change is satisfied."), kopfgo.ID("update_with_field_change_satisfied"),
		kopfgo.Field("spec.field"), kopfgo.OldValue("value"), kopfgo.NewValue("changed"))

	// A daemon runs only while its filters match: it stops (with
	// ErrFiltersMismatch) when spec.field changes away from "value".
	r.Daemon(kex, fieldDaemon, kopfgo.ID("daemon_with_field"),
		kopfgo.Field("spec.field"), kopfgo.Value("value"))
}

// fieldDaemon pings every second until it is asked to stop: on deletion,
// on the operator's exit, or when spec.field is no longer "value".
func fieldDaemon(ctx context.Context, s *kopfgo.Spawn) (any, error) {
	for !s.Stopped() && ctx.Err() == nil {
		s.Logger.Info("Field daemon is satisfied.")
		s.Sleep(ctx, time.Second)
	}
	return nil, nil
}

func sayYes(v any) bool { return v == "somevalue" }

func hasField(o *kopfgo.Object) bool { return o.Spec["field"] != nil }

func hasNotThisValue(o *kopfgo.Object) bool { return o.Spec["field"] == "not-this-value-for-sure" }

// logs returns a handler that logs msg. The ids are explicit: closures have
// no stable name.
func logs(msg string) kopfgo.ChangeFunc {
	return func(ctx context.Context, c *kopfgo.Change) (any, error) {
		c.Logger.Info(msg)
		return nil, nil
	}
}
