// Package timers is the public import path of a timer's schedule, kept for
// users: code written against github.com/kopfgo/kopfgo/timers keeps
// compiling. The schedule arithmetic is the engine's (internal/timers),
// re-exported here under the same names; the daemons machinery that runs
// timers stays internal.
//
// A user finds here Schedule (interval, idle, sharp) and what it says to do
// after an invocation (Next: Sleep, AwaitChange, Once), and Changes, which
// tracks when an object last changed for idle timers. Every identifier the
// package exported before it moved is here.
package timers
