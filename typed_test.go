package kopfgo_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kopfgo/kopfgo"
)

type exampleSpec struct {
	Field    string   `json:"field"`
	Replicas int32    `json:"replicas"`
	Items    []string `json:"items,omitempty"`
}

type example struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec exampleSpec `json:"spec"`
}

type exampleResult struct {
	Message string `json:"message"`
	Count   int    `json:"count,omitempty"`
}

func exampleBody(spec map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "kopf.dev/v1", "kind": "KopfExample",
		"metadata": map[string]any{"name": "kex-1", "namespace": "default"},
		"spec":     spec,
	}
}

func TestTypedDecodesTheObjectAndMarshalsTheResult(t *testing.T) {
	var got *example
	fn := kopfgo.Typed(func(ctx context.Context, c *kopfgo.TypedChange[*example]) (any, error) {
		got = c.Obj
		return exampleResult{Message: "hello " + c.Obj.Spec.Field}, nil
	})
	c := &kopfgo.Change{Object: kopfgo.Object{Body: exampleBody(map[string]any{"field": "x", "replicas": int64(3)})}}
	res, err := fn(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Metadata.Name != "kex-1" || got.Spec.Field != "x" || got.Spec.Replicas != 3 {
		t.Fatalf("decoded %+v", got)
	}
	m, ok := res.(map[string]any)
	if !ok || m["message"] != "hello x" || len(m) != 1 {
		t.Fatalf("result %#v: want a map with the struct's JSON fields", res)
	}
}

func TestTypedClientGoObjects(t *testing.T) {
	body := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "labels": map[string]any{"app": "web"}},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}},
	}
	var pod *corev1.Pod
	fn := kopfgo.Typed(func(ctx context.Context, c *kopfgo.TypedChange[*corev1.Pod]) (any, error) {
		pod = c.Obj
		return nil, nil
	})
	if _, err := fn(context.Background(), &kopfgo.Change{Object: kopfgo.Object{Body: body}}); err != nil {
		t.Fatal(err)
	}
	if pod.Labels["app"] != "web" || pod.Spec.Containers[0].Image != "busybox" {
		t.Fatalf("decoded %+v", pod)
	}
}

// A wrong type in the spec is the handler's error, naming the field and
// the Go type; the handler is not called.
func TestTypedDecodeErrorNamesTheField(t *testing.T) {
	called := false
	fn := kopfgo.Typed(func(ctx context.Context, c *kopfgo.TypedChange[example]) (any, error) {
		called = true
		return nil, nil
	})
	_, err := fn(context.Background(), &kopfgo.Change{Object: kopfgo.Object{Body: exampleBody(map[string]any{"replicas": "three"})}})
	var de *kopfgo.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T): want a *DecodeError", err, err)
	}
	if de.Field != "spec.replicas" || called {
		t.Fatalf("field %q, called %v", de.Field, called)
	}
	for _, want := range []string{"spec.replicas", "kopfgo_test.example", "string", "int32"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not mention %q", err, want)
		}
	}
}

// Update handlers get the old and new essences typed; an old state that no
// longer decodes is left zero (the change may be the fix of a wrong type),
// a new one fails.
func TestTypedOldAndNew(t *testing.T) {
	var old, new example
	fn := kopfgo.Typed(func(ctx context.Context, c *kopfgo.TypedChange[example]) (any, error) {
		old, new = c.Old, c.New
		return nil, nil
	})
	c := &kopfgo.Change{Object: kopfgo.Object{Body: exampleBody(map[string]any{"field": "b"})}, Reason: kopfgo.ReasonUpdate,
		Old: map[string]any{"spec": map[string]any{"field": "a"}}, New: map[string]any{"spec": map[string]any{"field": "b"}}}
	if _, err := fn(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if old.Spec.Field != "a" || new.Spec.Field != "b" {
		t.Fatalf("old %+v new %+v", old, new)
	}
	c.Old = map[string]any{"spec": map[string]any{"replicas": "bad"}}
	if _, err := fn(context.Background(), c); err != nil || old.Spec.Replicas != 0 {
		t.Fatalf("an undecodable old state: err %v, old %+v", err, old)
	}
	c.New = c.Old
	if _, err := fn(context.Background(), c); err == nil {
		t.Fatal("an undecodable new state passed")
	}
}

func TestTypedFieldValues(t *testing.T) {
	var old, new *int32
	fn := kopfgo.TypedField(func(ctx context.Context, c *kopfgo.FieldChange[example, *int32]) (any, error) {
		old, new = c.Old, c.New
		return nil, nil
	})
	c := &kopfgo.Change{Object: kopfgo.Object{Body: exampleBody(map[string]any{"replicas": int64(2)})}, Old: nil, New: int64(2)}
	if _, err := fn(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if old != nil || new == nil || *new != 2 {
		t.Fatalf("old %v new %v", old, new)
	}
}

// The handlers of one pass share one decoding of the same body.
func TestDecodeOncePerBody(t *testing.T) {
	body := exampleBody(map[string]any{"field": "x"})
	c := &kopfgo.Change{Object: kopfgo.Object{Body: body}}
	a, err := kopfgo.Decode[*example](c)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := kopfgo.Decode[*example](c)
	if a != b {
		t.Fatal("the same body was decoded twice")
	}
	other, _ := kopfgo.Decode[*example](&kopfgo.Change{Object: kopfgo.Object{Body: exampleBody(map[string]any{"field": "x"})}})
	if other == a {
		t.Fatal("another body got the first one's decoding")
	}
	s, _ := kopfgo.Decode[*example](&kopfgo.Spawn{Object: kopfgo.Object{Body: body}})
	if s != a || s.Spec.Field != "x" {
		t.Fatalf("a daemon's decode of the same body: %+v", s)
	}
}

func BenchmarkTypedDecode(b *testing.B) {
	spec := map[string]any{"field": "value", "replicas": int64(3), "items": []any{"a", "b", "c"}}
	b.Run("fresh body", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := kopfgo.Decode[*example](&kopfgo.Change{Object: kopfgo.Object{Body: exampleBody(spec)}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("same body", func(b *testing.B) {
		c := &kopfgo.Change{Object: kopfgo.Object{Body: exampleBody(spec)}}
		keep, _ := kopfgo.Decode[*example](c)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := kopfgo.Decode[*example](c); err != nil {
				b.Fatal(err)
			}
		}
		_ = keep
	})
	b.Run("pod", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			body := map[string]any{"apiVersion": "v1", "kind": "Pod",
				"metadata": map[string]any{"name": "p", "namespace": "default", "labels": map[string]any{"app": "web"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}}}
			if _, err := kopfgo.Decode[*corev1.Pod](&kopfgo.Change{Object: kopfgo.Object{Body: body}}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
