// Package timers is the public import path of timers, kept for users: an
// import of github.com/kopfgo/kopfgo/timers still resolves. A timer's
// schedule (interval, idle, sharp) and its arithmetic (Schedule, Next,
// Changes) are the engine's, in internal/timers, and nothing of them is
// re-exported: they decide when the daemons machinery invokes a timer, and
// no handler or registration names them.
//
// A timer is registered with kopfgo.On.Timer (or kopfgo.OnTimer for a typed
// one) and scheduled with the options kopfgo.Interval, kopfgo.Idle,
// kopfgo.InitialDelay and kopfgo.Sharp; its handler gets a kopfgo.Spawn, as
// a daemon's does (see package daemons).
//
// Removed from this path: Schedule (AfterSuccess, IdleLeft), Next and its
// values Sleep, AwaitChange and Once, Changes (Last, Reset) and NewChanges.
package timers
