// Package scripted is a test operator for the e2e metrics case: on each
// created object, every outcome a handler can have, a known number of
// times. ok succeeds and posts an Event; flaky fails temporarily (1s delay)
// twice, then succeeds; doomed fails permanently; broken returns a plain
// error once, which its single allowed retry turns into a failure. watch is
// an event handler; once is a daemon that succeeds at once (and is not
// spawned again); tick is a timer.
package scripted

import (
	"context"
	"errors"
	"time"

	"github.com/kopfgo/kopfgo"
)

func init() {
	kopfgo.On.Create("kopfexamples", ok, kopfgo.ID("ok"))
	kopfgo.On.Create("kopfexamples", flaky, kopfgo.ID("flaky"))
	kopfgo.On.Create("kopfexamples", doomed, kopfgo.ID("doomed"))
	kopfgo.On.Create("kopfexamples", broken, kopfgo.ID("broken"), kopfgo.Retries(1))
	kopfgo.On.Event("kopfexamples", watch, kopfgo.ID("watch"))
	kopfgo.On.Daemon("kopfexamples", once, kopfgo.ID("once"))
	kopfgo.On.Timer("kopfexamples", tick, kopfgo.ID("tick"), kopfgo.Interval(time.Second))
}

func watch(ctx context.Context, e *kopfgo.WatchEvent) (any, error) { return nil, nil }

func once(ctx context.Context, s *kopfgo.Spawn) (any, error) { return nil, nil }

func tick(ctx context.Context, s *kopfgo.Spawn) (any, error) { return nil, nil }

func ok(ctx context.Context, c *kopfgo.Change) (any, error) {
	return nil, kopfgo.Info(ctx, c, "Scripted", "posted by the ok handler")
}

func flaky(ctx context.Context, c *kopfgo.Change) (any, error) {
	if c.Retry < 2 {
		return nil, kopfgo.TemporaryMsg("not yet", time.Second)
	}
	return nil, nil
}

func doomed(ctx context.Context, c *kopfgo.Change) (any, error) {
	return nil, kopfgo.PermanentMsg("never")
}

func broken(ctx context.Context, c *kopfgo.Change) (any, error) {
	return nil, errors.New("an arbitrary error")
}
