// Package daemons is the public import path of daemons, kept for users:
// an import of github.com/kopfgo/kopfgo/daemons still resolves. The daemons
// machinery (the manager that owns every daemon and timer, the per-object
// sets, their stop stages and retries) is the engine's, in
// internal/daemons, and nothing of it is re-exported: every identifier the
// package exported before it moved belonged to that machinery and named
// the engine's internal types, directly or through its methods
// (Config.Background, Object.Resource, Set.Sync and Set.Requires taking
// handling specs, Manager.NewSet and NewManager taking those).
//
// A daemon's handler finds what it uses in package handlers: Spawn (its
// argument, with Stopping, Stopped, StopReason, Sleep, Live, ApplyPatch),
// SpawnFunc, and the stop reasons ErrOperatorExiting, ErrOperatorPausing,
// ErrResourceDeleted and ErrFiltersMismatch. Daemons are registered with
// kopfgo.OnDaemon and timers with kopfgo.OnTimer.
//
// Removed from this path: Config, Manager (NewSet, Running, Shutdown),
// NewManager, Object, and Set (Changed, Forget, Halt, Holding, Requires,
// Stop, Sync).
package daemons
