package probe

import (
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The workload every contender serves: kopfexamples, with one create handler
// whose result goes to status.create_fn and one update handler.
var (
	GVR = schema.GroupVersionResource{Group: "kopf.dev", Version: "v1", Resource: "kopfexamples"}
	GVK = schema.GroupVersionKind{Group: "kopf.dev", Version: "v1", Kind: "KopfExample"}
)

// The names of the handled state, shared with kopfgo's defaults: the floor
// and the peer write the same diff-base annotation and the same result as
// kopfgo, so that one set of already-handled objects is already handled for
// all of them (the restart scenario), and the driver checks all of them
// with one predicate.
const (
	DiffBaseAnnotation = "kopf.zalando.org/last-handled-configuration"
	CreateHandler      = "create_fn"
	Message            = "hello world"
)

// DiffBase is the diff-base annotation's value for an object with this spec
// and no labels or annotations of its own: the essence {"spec": ...} as
// compact JSON with sorted keys and a trailing newline, byte for byte what
// kopfgo writes. A contender whose object carries this value has nothing to
// do.
func DiffBase(spec any) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b) // its trailing newline is the annotation's
	enc.SetEscapeHTML(false)
	if err := enc.Encode(map[string]any{"spec": spec}); err != nil {
		return "", err
	}
	return b.String(), nil
}

// AnnotationsPatch and StatusPatch are the floor's and the peer's two writes
// for a new object (an updated one gets the first only).
func AnnotationsPatch(diffBase string) ([]byte, error) {
	return json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{DiffBaseAnnotation: diffBase}}})
}

// StatusPatch is the create handler's result, as kopfgo delivers it.
func StatusPatch() []byte {
	return []byte(`{"status":{"` + CreateHandler + `":{"message":"` + Message + `"}}}`)
}
