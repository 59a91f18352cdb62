// Package misfit uses options where they do not fit: each marked line must
// fail to compile (TestOptionsFitTheirHandlerKinds).
package misfit

import (
	"context"
	"time"

	"github.com/kopfgo/kopfgo"
)

func fn(ctx context.Context, s *kopfgo.Spawn) (any, error) { return nil, nil }

func change(ctx context.Context, c *kopfgo.Change) (any, error) { return nil, nil }

func init() {
	kopfgo.On.Daemon("kex", fn, kopfgo.Interval(time.Second))           // misfit
	kopfgo.On.Daemon("kex", fn, kopfgo.Idle(time.Second))               // misfit
	kopfgo.On.Daemon("kex", fn, kopfgo.Sharp())                         // misfit
	kopfgo.On.Daemon("kex", fn, kopfgo.Optional())                      // misfit
	kopfgo.On.Timer("kex", fn, kopfgo.CancellationBackoff(time.Second)) // misfit
	kopfgo.On.Timer("kex", fn, kopfgo.CancellationTimeout(time.Second)) // misfit
	kopfgo.On.Timer("kex", fn, kopfgo.CancellationPolling(time.Second)) // misfit
	kopfgo.On.Timer("kex", fn, kopfgo.Deleted())                        // misfit
	kopfgo.On.Create("kex", change, kopfgo.InitialDelay(time.Second))   // misfit
	kopfgo.On.Delete("kex", change, kopfgo.Interval(time.Second))       // misfit
}
