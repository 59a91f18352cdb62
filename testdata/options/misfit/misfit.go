// Package misfit uses options where they do not fit: each marked line must
// fail to compile (TestOptionsFitTheirHandlerKinds). Options of one kind
// within a family (Interval on a daemon) compile and are registration
// errors instead (TestMisfitsWithinAFamilyAreRegistrationErrors).
package misfit

import (
	"context"
	"time"

	"github.com/kopfgo/kopfgo"
)

func fn(ctx context.Context, s *kopfgo.Spawn) (any, error) { return nil, nil }

func change(ctx context.Context, c *kopfgo.Change) (any, error) { return nil, nil }

func event(ctx context.Context, e *kopfgo.WatchEvent) (any, error) { return nil, nil }

func startup(ctx context.Context, a *kopfgo.Activity) error { return nil }

func chg(c *kopfgo.Change) bool { return true }

func init() {
	kopfgo.On.Daemon("kex", fn, kopfgo.Optional())                    // misfit
	kopfgo.On.Daemon("kex", fn, kopfgo.WhenChange(chg))               // misfit
	kopfgo.On.Daemon("kex", fn, kopfgo.Global())                      // misfit
	kopfgo.On.Timer("kex", fn, kopfgo.Deleted())                      // misfit
	kopfgo.On.Timer("kex", fn, kopfgo.OldValue(1))                    // misfit
	kopfgo.On.Timer("kex", fn, kopfgo.Operations("CREATE"))           // misfit
	kopfgo.On.Create("kex", change, kopfgo.InitialDelay(time.Second)) // misfit
	kopfgo.On.Delete("kex", change, kopfgo.Interval(time.Second))     // misfit
	kopfgo.On.Event("kex", event, kopfgo.InitialDelay(time.Second))   // misfit
	kopfgo.On.Startup(startup, kopfgo.Idle(time.Second))              // misfit
}
