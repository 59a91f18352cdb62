// Package daemons shows daemons: a goroutine per object, started when the
// object appears (or the operator starts) and stopped when it is deleted or
// the operator exits. Run:
//
//	kopfgo run ./examples/14-daemons
package daemons

import (
	"context"
	"fmt"
	"time"

	"github.com/kopfgo/kopfgo"
)

func Register(r kopfgo.Registrar) {
	r.Daemon("kopfexamples", backgroundSync, kopfgo.ID("background_sync"), kopfgo.Backoff(3*time.Second))
	r.Daemon("kopfexamples", backgroundAsync, kopfgo.ID("background_async"), kopfgo.Backoff(3*time.Second),
		kopfgo.CancellationBackoff(time.Second), kopfgo.CancellationTimeout(500*time.Millisecond),
		kopfgo.Annotations{"someannotation": "somevalue"})
}

// backgroundSync checks the stop flag between its pings, as Kopf's sync
// daemons must. It fails its first 3 attempts, then pings every 5 seconds
// for 30 seconds (unless stopped), and exits for good.
func backgroundSync(ctx context.Context, d *kopfgo.Spawn) (any, error) {
	if d.Retry < 3 {
		d.Patch.Status()["message"] = fmt.Sprintf("Failed %d times.", d.Retry+1)
		return nil, kopfgo.TemporaryMsg("Simulated failure.", time.Second)
	}
	started := time.Now()
	for !d.Stopped() && time.Since(started) <= 30*time.Second {
		// Live: the object as it is now, not as it was when the daemon started.
		d.Logger.Info(fmt.Sprintf("=> Ping from a sync daemon: field=%q, retry=%d", d.Live().Spec["field"], d.Retry))
		d.Sleep(ctx, 5*time.Second)
	}
	d.Patch.Status()["message"] = "Accompanying is finished."
	return nil, nil
}

// backgroundAsync relies on its ctx, cancelled one second (its
// CancellationBackoff) after the stop is requested. It also fails its first
// 3 attempts, then runs until stopped.
func backgroundAsync(ctx context.Context, d *kopfgo.Spawn) (any, error) {
	if d.Retry < 3 {
		return nil, kopfgo.TemporaryMsg("Simulated failure.", time.Second)
	}
	for {
		d.Logger.Info(fmt.Sprintf("=> Ping from an async daemon: field=%q", d.Live().Spec["field"]))
		select {
		case <-ctx.Done():
			return nil, ctx.Err() // a daemon reporting its stop is no failure
		case <-time.After(5 * time.Second):
		}
	}
}
