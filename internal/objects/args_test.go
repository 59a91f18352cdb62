package objects_test

import (
	"testing"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/internal/objects"
)

type spec struct {
	Field string `json:"field"`
}

// The arguments of every kind of handler, untyped and typed, and a slice
// of them, name the handled object: events posted about them go to it.
func TestHandlerArgumentsNameTheirObject(t *testing.T) {
	handled := func() kopfgo.Object {
		return kopfgo.Object{Body: map[string]any{
			"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
			"metadata": map[string]any{"name": "kopf-example-1", "namespace": "ns1", "uid": "uid-1"},
		}}
	}
	c := &kopfgo.Change{Object: handled()}
	o := handled()
	for name, arg := range map[string]any{
		"*Change":        c,
		"Change":         *c,
		"*Object":        &o,
		"Object":         o,
		"*WatchEvent":    &kopfgo.WatchEvent{Object: handled()},
		"*Spawn":         &kopfgo.Spawn{Object: handled()},
		"*TypedChange":   &kopfgo.TypedChange[spec]{Change: c},
		"*FieldChange":   &kopfgo.FieldChange[spec, string]{Change: c},
		"*TypedSpawn":    &kopfgo.TypedSpawn[spec]{Spawn: &kopfgo.Spawn{Object: handled()}},
		"*TypedEvent":    &kopfgo.TypedEvent[spec]{WatchEvent: &kopfgo.WatchEvent{Object: handled()}},
		"*TypedObject":   &kopfgo.TypedObject[spec]{Object: &o},
		"[]any{*Change}": []any{c},
	} {
		ids, err := objects.Identities(arg)
		if err != nil || len(ids) != 1 || ids[0].UID != "uid-1" || ids[0].Kind != "KopfExample" || ids[0].Namespace != "ns1" {
			t.Errorf("%s: identities %+v, %v", name, ids, err)
		}
	}
	if _, ok := objects.HandlerBody(&kopfgo.TypedChange[spec]{}); ok {
		t.Error("a typed argument whose embedded Change is nil has a body")
	}
}
