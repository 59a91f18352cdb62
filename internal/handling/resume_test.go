package handling

import (
	"testing"

	"github.com/kopfgo/kopfgo/internal/causes"
)

// Resume handlers join the deletion of an object first seen in the initial
// listing only when registered with Deleted, as Kopf's on.resume(deleted=True)
// (compat: handlers-resume, handlers-resume-deleted); a deletion seen while
// running is no resumption.
func TestResumeHandlersOnDeletionOnlyWithDeleted(t *testing.T) {
	var r Registry
	r.AddChanging(Registration{Resource: "kopfexamples", Reason: causes.Resume, Fn: namedFn, Configure: func(h *Handler) { h.ID = "plain" }})
	r.AddChanging(Registration{Resource: "kopfexamples", Reason: causes.Resume, Fn: otherFn, Configure: func(h *Handler) { h.ID = "deleted"; h.Deleted = true }})
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"spec": map[string]any{"field": "a"}}
	for _, tt := range []struct {
		initial bool
		want    []string
	}{
		{true, []string{"deleted"}},
		{false, nil},
	} {
		var got []string
		for _, h := range Select(r.Changing(), &Cause{Reason: causes.Delete, Initial: tt.initial, Old: body, New: body}) {
			got = append(got, h.ID)
		}
		if len(got) != len(tt.want) || (len(got) == 1 && got[0] != tt.want[0]) {
			t.Errorf("deletion, initial=%v: selected %v, want %v", tt.initial, got, tt.want)
		}
	}
}
