// Package fit uses every daemon and timer option where it fits: it must
// compile (TestOptionsFitTheirHandlerKinds).
package fit

import (
	"context"
	"time"

	"github.com/kopfgo/kopfgo"
)

func fn(ctx context.Context, s *kopfgo.Spawn) (any, error) { return nil, nil }

func delay(s *kopfgo.Spawn) time.Duration { return time.Second }

func init() {
	kopfgo.On.Daemon("kex", fn, kopfgo.ID("d"), kopfgo.Retries(3), kopfgo.Backoff(time.Second),
		kopfgo.Timeout(time.Minute), kopfgo.Errors(kopfgo.ErrorsPermanent), kopfgo.Param(1),
		kopfgo.InitialDelay(time.Second), kopfgo.InitialDelayFunc(delay),
		kopfgo.CancellationBackoff(time.Second), kopfgo.CancellationTimeout(time.Second),
		kopfgo.CancellationPolling(time.Second))
	kopfgo.On.Timer("kex", fn, kopfgo.ID("t"), kopfgo.Retries(3), kopfgo.Backoff(time.Second),
		kopfgo.Timeout(time.Minute), kopfgo.Errors(kopfgo.ErrorsIgnored), kopfgo.Param(1),
		kopfgo.InitialDelay(time.Second), kopfgo.InitialDelayFunc(delay),
		kopfgo.Interval(time.Second), kopfgo.Idle(time.Second), kopfgo.Sharp())
}
