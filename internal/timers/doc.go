// Package timers owns the schedules of timers: when a timer may fire given
// its interval, its idle time and the object's last essential change, and
// how long it sleeps after an invocation (compat: timers).
//
// It is pure: times come in as arguments, so every rule is a table test and
// internal/daemons drives it with the operator's clock, fake in
// tests. Keeping the rules apart from the goroutines that sleep on them is
// what lets the sharp grid and the idle postponement be checked exactly,
// without waiting for real seconds.
package timers
