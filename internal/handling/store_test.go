package handling_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/conventions"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/patch"
	"github.com/kopfgo/kopfgo/persistence"
)

func defaults() *config.Persistence {
	return &config.Persistence{ProgressStorage: persistence.Default(), DiffBaseStorage: diffbase.Default()}
}

func object(annotations map[string]any) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": "kex", "namespace": "default", "uid": "u1", "annotations": annotations},
		"spec":     map[string]any{"field": "value"},
	}
}

// annotationsOf are the annotations p sets, as the object carries them
// once p is applied.
func annotationsOf(p *patch.Patch) map[string]any {
	meta, _ := p.Map()["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	return ann
}

func TestHandledIsReadBackAsLastHandled(t *testing.T) {
	s := handling.StoreOf(defaults())
	body := object(map[string]any{"kopf.zalando.org/create_fn": `{"started":"2026-01-02T03:04:05.000000"}`, "team": "a"})
	essence := s.Essence(body, nil)
	if _, ok := essence["metadata"].(map[string]any)["annotations"].(map[string]any)["kopf.zalando.org/create_fn"]; ok {
		t.Errorf("essence %v holds a progress record", essence)
	}
	if old, err := s.LastHandled(body); old != nil || err != nil {
		t.Fatalf("never handled: LastHandled = %v, %v", old, err)
	}
	p := &patch.Patch{}
	s.Handled(body, p, essence)
	ann := map[string]any{"team": "a"}
	for k, v := range annotationsOf(p) {
		ann[k] = v
	}
	handled := object(ann)
	old, err := s.LastHandled(handled)
	if err != nil || !reflect.DeepEqual(old, essence) {
		t.Errorf("LastHandled = %v, %v; want %v", old, err, essence)
	}
	if d := handling.DiffOf(old, s.Essence(handled, nil)); len(d) != 0 {
		t.Errorf("the stored diff-base differs from the essence it was stored for: %v", d)
	}
}

// A diff-base that Kopf's older versions stored with progress records in
// it: those never count as changes.
func TestLastHandledHidesProgressRecords(t *testing.T) {
	s := handling.StoreOf(defaults())
	body := object(map[string]any{"kopf.zalando.org/last-handled-configuration": `{"metadata":{"annotations":{"kopf.zalando.org/create_fn":"x","team":"a"}},"spec":{"field":"value"}}` + "\n"})
	old, err := s.LastHandled(body)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"metadata": map[string]any{"annotations": map[string]any{"team": "a"}}, "spec": map[string]any{"field": "value"}}
	if !reflect.DeepEqual(old, want) {
		t.Errorf("LastHandled = %v, want %v", old, want)
	}
}

func TestUnreadableLastHandledCountsAsNeverHandled(t *testing.T) {
	s := handling.StoreOf(defaults())
	old, err := s.LastHandled(object(map[string]any{"kopf.zalando.org/last-handled-configuration": "{not json"}))
	if old != nil || !errors.Is(err, diffbase.ErrCorrupt) {
		t.Errorf("LastHandled = %v, %v; want nil and ErrCorrupt", old, err)
	}
}

func TestTouchStampsAndUntouchRemoves(t *testing.T) {
	s := handling.StoreOf(defaults())
	at := time.Date(2026, 1, 2, 3, 4, 5, 678901000, time.UTC)
	p := &patch.Patch{}
	s.Touch(object(nil), p, at)
	if got := annotationsOf(p)["kopf.zalando.org/touch-dummy"]; got != conventions.FormatTime(at) {
		t.Errorf("touch-dummy = %v, want %s", got, conventions.FormatTime(at))
	}
	if !s.ProgressOnly(p) {
		t.Errorf("a touch is the progress storage's own: %v", p.Map())
	}
	touched := object(annotationsOf(p))
	p = &patch.Patch{}
	s.Untouch(touched, p)
	if v, ok := annotationsOf(p)["kopf.zalando.org/touch-dummy"]; !ok || v != nil {
		t.Errorf("Untouch patches %v, want the touch-dummy removed", p.Map())
	}
	p = &patch.Patch{}
	s.Untouch(object(nil), p)
	if !p.IsEmpty() {
		t.Errorf("Untouch without a touch-dummy patches %v", p.Map())
	}
}

func TestProgressOnly(t *testing.T) {
	s := handling.StoreOf(defaults())
	p := &patch.Patch{}
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.Store("create_fn", &handling.Record{Started: &started}, object(nil), p)
	if !s.ProgressOnly(p) {
		t.Errorf("a record alone: ProgressOnly = false for %v", p.Map())
	}
	p.Status()["create_fn"] = map[string]any{"message": "hello"}
	if s.ProgressOnly(p) {
		t.Errorf("a handler's result too: ProgressOnly = true for %v", p.Map())
	}
}

// The store reads the storages from the settings on every call: a storage
// set after the store was made is the one used.
func TestStoreFollowsTheSettings(t *testing.T) {
	p := defaults()
	s := handling.StoreOf(p)
	p.ProgressStorage = persistence.NewAnnotationsStorage()
	p.ProgressStorage.(*persistence.AnnotationsStorage).Prefix = "example.com"
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pt := &patch.Patch{}
	s.Store("create_fn", &handling.Record{Started: &started}, object(nil), pt)
	if _, ok := annotationsOf(pt)["example.com/create_fn"]; !ok {
		t.Errorf("Store wrote %v, want the record under the prefix set after Of", pt.Map())
	}
	rec, err := s.Fetch("create_fn", object(annotationsOf(pt)))
	if err != nil || rec == nil || !rec.Started.Equal(started) {
		t.Errorf("Fetch = %+v, %v", rec, err)
	}
}
