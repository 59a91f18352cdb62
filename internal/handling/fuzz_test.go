package handling

import (
	"testing"

	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/unjson"
)

// Filters look at labels, annotations and fields that may hold anything a
// client wrote (labels: null, a spec that is a string): matching must decide
// without panicking, and a filter on a value never matches a body that
// lacks the value.
func FuzzFilters(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"metadata":{"labels":null}}`, `{"metadata":{"labels":"x"}}`, `{"metadata":{"labels":{"l":1}}}`,
		`{"metadata":{"labels":{"l":"v","p":""},"annotations":{"a":"1"}},"spec":{"field":"v"}}`,
		`{"metadata":{"annotations":[]},"spec":"a string"}`, `{"spec":{"field":{"deep":[1]}}}`, `{"metadata":7}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := unjson.Unmarshal(data)
		body, ok := v.(map[string]any)
		if err != nil || !ok {
			return
		}
		h := &Handler{Field: []string{"spec", "field"}}
		h.Filters.AddLabels(map[string]any{"l": "v", "p": handlers.Present, "a": handlers.Absent})
		h.Filters.AddAnnotations(map[string]any{"a": "1"})
		h.Filters.SetValue("v")
		if err := h.Filters.Validate(true, false); err != nil {
			t.Fatal(err)
		}
		c := &Cause{Body: body}
		if h.MatchesObject(c) {
			for _, want := range [][2]any{{"labels", "l"}, {"annotations", "a"}} {
				m := dicts.Map(body, "metadata", want[0].(string))
				if _, ok := m[want[1].(string)]; !ok {
					t.Fatalf("%s matched without %v", data, want)
				}
			}
		}
		h.prematches(c)
		h.matches(c)
	})
}
