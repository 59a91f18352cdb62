package causes

import (
	"testing"

	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/internal/unjson"
	"github.com/kopfgo/kopfgo/patch"
)

// Cause detection and the finalizer logic read metadata that anyone can write
// (deletionTimestamp, finalizers): whatever shape it has, they must decide
// without panicking, and a finalizer added is then found.
func FuzzDetect(f *testing.F) {
	const fin = "kopf.zalando.org/KopfFinalizerMarker"
	for _, s := range []string{
		`{}`, `{"metadata":null}`, `{"metadata":{"finalizers":null}}`, `{"metadata":{"finalizers":"x"}}`,
		`{"metadata":{"finalizers":[1,null,"kopf.zalando.org/KopfFinalizerMarker"]}}`,
		`{"metadata":{"deletionTimestamp":null}}`, `{"metadata":{"deletionTimestamp":""}}`,
		`{"metadata":{"deletionTimestamp":7,"finalizers":["kopf.zalando.org/KopfFinalizerMarker"]}}`,
		`{"metadata":{"deletionTimestamp":"2026-01-01T00:00:00Z"}}`, `{"spec":"x"}`,
	} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, required bool) {
		v, err := unjson.Unmarshal(data)
		body, ok := v.(map[string]any)
		if err != nil || !ok {
			return
		}
		essence := diffbase.NewAnnotationsStorage().Build(body, nil)
		Detect(Input{Body: body, Finalizer: fin, New: essence, Diff: diffbase.Compute(nil, essence)})
		var p patch.Patch
		if required {
			AddFinalizer(body, &p, fin)
			if !HasFinalizer(p.Apply(body), fin) {
				t.Fatalf("added the finalizer to %s, but it is not there: %v", data, p.Map())
			}
		} else {
			RemoveFinalizer(body, &p, fin)
			if HasFinalizer(p.Apply(body), fin) {
				t.Fatalf("removed the finalizer from %s, but it is there: %v", data, p.Map())
			}
		}
	})
}
