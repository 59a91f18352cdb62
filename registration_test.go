package kopfgo_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo"
)

func namedChange(ctx context.Context, c *kopfgo.Change) (any, error)           { return nil, nil }
func namedEvent(ctx context.Context, e *kopfgo.WatchEvent) (any, error)        { return nil, nil }
func namedSpawn(ctx context.Context, s *kopfgo.Spawn) (any, error)             { return nil, nil }
func namedStartup(ctx context.Context, a *kopfgo.Activity) error               { return nil }
func namedAdmission(ctx context.Context, a *kopfgo.Admission) error            { return nil }
func namedIndex(ctx context.Context, o *kopfgo.Object) (map[string]int, error) { return nil, nil }

type kex struct {
	Spec struct {
		X int `json:"x"`
	} `json:"spec"`
}

func namedTypedChange(ctx context.Context, c *kopfgo.TypedChange[*kex]) (any, error) { return nil, nil }
func namedTypedField(ctx context.Context, c *kopfgo.FieldChange[*kex, int]) (any, error) {
	return nil, nil
}
func namedTypedSpawn(ctx context.Context, s *kopfgo.TypedSpawn[*kex]) (any, error) { return nil, nil }
func namedTypedEvent(ctx context.Context, e *kopfgo.TypedEvent[*kex]) (any, error) { return nil, nil }
func namedTypedIndex(ctx context.Context, o *kopfgo.TypedObject[*kex]) (map[string]int, error) {
	return nil, nil
}

// Every handler kind goes through one validation: the same mistake gives
// the same message whatever the kind, naming the registration, and comes
// back from Err (and Run) as an ErrRegistration.
func TestOneMessagePerMistakeForEveryKind(t *testing.T) {
	kinds := map[string]func(op *kopfgo.Operator, closure bool){
		`On.Create("kex") handler`: func(op *kopfgo.Operator, closure bool) {
			fn := namedChange
			if closure {
				fn = func(ctx context.Context, c *kopfgo.Change) (any, error) { return nil, nil }
			}
			op.On.Create("kex", fn)
		},
		`On.Field("kex") handler`: func(op *kopfgo.Operator, closure bool) {
			fn := namedChange
			if closure {
				fn = func(ctx context.Context, c *kopfgo.Change) (any, error) { return nil, nil }
			}
			op.On.Field("kex", "spec.x", fn)
		},
		`On.Event("kex") handler`: func(op *kopfgo.Operator, closure bool) {
			fn := namedEvent
			if closure {
				fn = func(ctx context.Context, e *kopfgo.WatchEvent) (any, error) { return nil, nil }
			}
			op.On.Event("kex", fn)
		},
		`On.Startup handler`: func(op *kopfgo.Operator, closure bool) {
			fn := namedStartup
			if closure {
				fn = func(ctx context.Context, a *kopfgo.Activity) error { return nil }
			}
			op.On.Startup(fn)
		},
		`On.Daemon("kex") handler`: func(op *kopfgo.Operator, closure bool) {
			fn := namedSpawn
			if closure {
				fn = func(ctx context.Context, s *kopfgo.Spawn) (any, error) { return nil, nil }
			}
			op.On.Daemon("kex", fn)
		},
		`On.Timer("kex") handler`: func(op *kopfgo.Operator, closure bool) {
			fn := namedSpawn
			if closure {
				fn = func(ctx context.Context, s *kopfgo.Spawn) (any, error) { return nil, nil }
			}
			op.On.Timer("kex", fn, kopfgo.Interval(time.Second))
		},
		`On.Daemon("kex") handler (typed)`: func(op *kopfgo.Operator, closure bool) {
			fn := namedTypedSpawn
			if closure {
				fn = func(ctx context.Context, s *kopfgo.TypedSpawn[*kex]) (any, error) { return nil, nil }
			}
			kopfgo.OnDaemon(op.On, "kex", fn)
		},
		`On.Timer("kex") handler (typed)`: func(op *kopfgo.Operator, closure bool) {
			fn := namedTypedSpawn
			if closure {
				fn = func(ctx context.Context, s *kopfgo.TypedSpawn[*kex]) (any, error) { return nil, nil }
			}
			kopfgo.OnTimer(op.On, "kex", fn, kopfgo.Idle(time.Second))
		},
		`On.Event("kex") handler (typed)`: func(op *kopfgo.Operator, closure bool) {
			fn := namedTypedEvent
			if closure {
				fn = func(ctx context.Context, e *kopfgo.TypedEvent[*kex]) (any, error) { return nil, nil }
			}
			kopfgo.OnEvent(op.On, "kex", fn)
		},
		`On.Delete("kex") handler (typed)`: func(op *kopfgo.Operator, closure bool) {
			fn := namedTypedChange
			if closure {
				fn = func(ctx context.Context, c *kopfgo.TypedChange[*kex]) (any, error) { return nil, nil }
			}
			kopfgo.OnDelete(op.On, "kex", fn)
		},
		`On.Resume("kex") handler (typed)`: func(op *kopfgo.Operator, closure bool) {
			fn := namedTypedChange
			if closure {
				fn = func(ctx context.Context, c *kopfgo.TypedChange[*kex]) (any, error) { return nil, nil }
			}
			kopfgo.OnResume(op.On, "kex", fn)
		},
		`On.Field("kex") handler (typed)`: func(op *kopfgo.Operator, closure bool) {
			fn := namedTypedField
			if closure {
				fn = func(ctx context.Context, c *kopfgo.FieldChange[*kex, int]) (any, error) { return nil, nil }
			}
			kopfgo.OnField(op.On, "kex", "spec.x", fn)
		},
		`OnIndex("kex") indexer (typed)`: func(op *kopfgo.Operator, closure bool) {
			fn := namedTypedIndex
			if closure {
				fn = func(ctx context.Context, o *kopfgo.TypedObject[*kex]) (map[string]int, error) { return nil, nil }
			}
			kopfgo.OnTypedIndex(op.On, "kex", fn)
		},
		`On.Validate("kex") handler`: func(op *kopfgo.Operator, closure bool) {
			fn := namedAdmission
			if closure {
				fn = func(ctx context.Context, a *kopfgo.Admission) error { return nil }
			}
			op.On.Validate("kex", fn)
		},
		`OnIndex("kex") indexer`: func(op *kopfgo.Operator, closure bool) {
			fn := namedIndex
			if closure {
				fn = func(ctx context.Context, o *kopfgo.Object) (map[string]int, error) { return nil, nil }
			}
			kopfgo.OnIndex(op.On, "kex", fn)
		},
	}
	for what, register := range kinds {
		t.Run(what, func(t *testing.T) {
			check := func(err error, want ...string) {
				t.Helper()
				if !errors.Is(err, kopfgo.ErrRegistration) {
					t.Fatalf("Err = %v, want ErrRegistration", err)
				}
				for _, w := range append(want, strings.TrimSuffix(what, " (typed)")) {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("Err = %v\nwant it to mention %q", err, w)
					}
				}
			}
			op := kopfgo.New(kopfgo.Options{})
			register(op, true)
			check(op.Err(), `a closure or function literal has no stable name; give it kopfgo.ID("..."), because the id keys what is kept for it`)

			op = kopfgo.New(kopfgo.Options{})
			register(op, false)
			register(op, false)
			check(op.Err(), `duplicate id "named`, "give one of them another kopfgo.ID")
		})
	}
}
