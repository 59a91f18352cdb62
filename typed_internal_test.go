package kopfgo

import (
	"context"
	"errors"
	"strings"
	"testing"
)

type typedThing struct {
	Spec struct {
		Field string `json:"field"`
	} `json:"spec"`
}

func typedCreateFn(ctx context.Context, c *TypedChange[typedThing]) (any, error) { return nil, nil }
func typedFieldFn(ctx context.Context, c *FieldChange[typedThing, string]) (any, error) {
	return nil, nil
}

// Typed handlers are named after the user's function, not the adapter they
// share; a closure needs an ID as an untyped one does.
func TestTypedHandlersAreNamedAfterTheirFunction(t *testing.T) {
	op := New(Options{})
	OnCreate(op.On, "kex", typedCreateFn)
	OnField(op.On, "kex", "spec.field", typedFieldFn)
	OnUpdate(op.On, "kex", typedCreateFn, ID("upd"))
	if err := op.Err(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range op.reg.Changing() {
		ids = append(ids, h.ID)
	}
	if got, want := strings.Join(ids, ","), "typedCreateFn,typedFieldFn/spec.field,upd"; got != want {
		t.Fatalf("ids %s, want %s", got, want)
	}
	op = New(Options{})
	OnCreate(op.On, "kex", func(ctx context.Context, c *TypedChange[typedThing]) (any, error) { return nil, nil })
	if err := op.Err(); err == nil || !strings.Contains(err.Error(), "kopfgo.ID") {
		t.Fatalf("a typed closure without an id: %v", err)
	}
}

func typedDaemonFn(ctx context.Context, s *TypedSpawn[typedThing]) (any, error) {
	return map[string]any{"field": s.Obj.Spec.Field}, nil
}
func typedTimerFn(ctx context.Context, s *TypedSpawn[typedThing]) (any, error) { return nil, nil }
func typedEventFn(ctx context.Context, e *TypedEvent[typedThing]) (any, error) {
	return map[string]any{"field": e.Obj.Spec.Field, "type": string(e.Type)}, nil
}
func typedIndexFn(ctx context.Context, o *TypedObject[typedThing]) (map[string]string, error) {
	return map[string]string{o.Obj.Spec.Field: o.Name}, nil
}

// Typed daemons, timers, event handlers and indices are named after the
// user's function, as typed changing handlers are, and registered on the
// Registrar beside the untyped ones.
func TestTypedSpawningEventsAndIndicesAreNamedAfterTheirFunction(t *testing.T) {
	op := New(Options{})
	OnDaemon(op.On, "kex", typedDaemonFn)
	OnTimer(op.On, "kex", typedTimerFn, Interval(1))
	OnEvent(op.On, "kex", typedEventFn)
	ix := OnTypedIndex(op.On, "kex", typedIndexFn)
	if err := op.Err(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range op.reg.Spawning() {
		ids = append(ids, s.Kind.String()+":"+s.ID)
	}
	for _, e := range op.reg.Events() {
		ids = append(ids, "Event:"+e.ID)
	}
	for _, r := range op.indexers {
		ids = append(ids, "Index:"+r.Spec().ID)
	}
	if got, want := strings.Join(ids, ","), "Daemon:typedDaemonFn,Timer:typedTimerFn,Event:typedEventFn,Index:typedIndexFn"; got != want {
		t.Fatalf("ids %s, want %s", got, want)
	}
	if ix == nil || ix.Len() != 0 {
		t.Fatalf("the index: %v", ix)
	}
}

// The typed adapters decode the object into T, pass it with the untyped
// argument, and fail with a DecodeError naming the field when it does not
// decode.
func TestTypedSpawnEventAndIndexDecode(t *testing.T) {
	good := map[string]any{"metadata": map[string]any{"name": "kex1"}, "spec": map[string]any{"field": "value"}}
	bad := map[string]any{"metadata": map[string]any{"name": "kex1"}, "spec": map[string]any{"field": 1}}
	ctx := context.Background()
	checkBad := func(what string, err error) {
		t.Helper()
		var de *DecodeError
		if !errors.As(err, &de) || de.Field != "spec.field" || de.State != "object" {
			t.Errorf("%s with a wrong type: %v, want a DecodeError of the object naming spec.field", what, err)
		}
	}

	spawn := typedSpawn(typedDaemonFn)
	res, err := spawn(ctx, &Spawn{Object: Object{Body: good, Name: "kex1"}})
	if err != nil || res.(map[string]any)["field"] != "value" {
		t.Errorf("daemon: %v, %v", res, err)
	}
	_, err = spawn(ctx, &Spawn{Object: Object{Body: bad}})
	checkBad("daemon", err)

	event := typedEvent(typedEventFn)
	res, err = event(ctx, &WatchEvent{Object: Object{Body: good}, Type: EventAdded})
	if err != nil || res.(map[string]any)["field"] != "value" || res.(map[string]any)["type"] != "ADDED" {
		t.Errorf("event: %v, %v", res, err)
	}
	_, err = event(ctx, &WatchEvent{Object: Object{Body: bad}})
	checkBad("event handler", err)

	index := typedIndex(typedIndexFn)
	keys, err := index(ctx, &Object{Body: good, Name: "kex1"})
	if err != nil || keys["value"] != "kex1" {
		t.Errorf("index: %v, %v", keys, err)
	}
	_, err = index(ctx, &Object{Body: bad})
	checkBad("index", err)

	if typedSpawn[typedThing](nil) != nil || typedEvent[typedThing](nil) != nil || typedIndex[typedThing, string, string](nil) != nil {
		t.Error("a nil typed function must stay nil, so that registration reports it")
	}
}
