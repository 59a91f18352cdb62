// Package timers shows timers: a function called per object on a schedule,
// here only once the object has been left alone for a while. Run:
//
//	kopfgo run ./examples/15-timers
package timers

import (
	"context"
	"fmt"
	"time"

	"github.com/kopfgo/kopfgo"
)

func Register(r kopfgo.Registrar) {
	r.Timer("kopfexamples", everyFewSecondsSync, kopfgo.ID("every_few_seconds_sync"),
		kopfgo.Idle(5*time.Second), kopfgo.Interval(2*time.Second))
	r.Timer("kopfexamples", everyFewSecondsAsync, kopfgo.ID("every_few_seconds_async"),
		kopfgo.Idle(10*time.Second), kopfgo.Interval(4*time.Second))
}

func everyFewSecondsSync(ctx context.Context, t *kopfgo.Spawn) (any, error) {
	t.Logger.Info(fmt.Sprintf("Ping from a sync timer: field=%q", t.Spec["field"]))
	return nil, nil
}

func everyFewSecondsAsync(ctx context.Context, t *kopfgo.Spawn) (any, error) {
	t.Logger.Info(fmt.Sprintf("Ping from an async timer: field=%q", t.Spec["field"]))
	return nil, nil
}
