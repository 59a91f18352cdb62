// Package memlimit finds the memory limit of the cgroup the process runs in,
// so that the operator can give Go's garbage collector a soft limit below it
// (runtime/debug.SetMemoryLimit): near the limit, a Go program that does not
// know it grows its heap until the kernel kills it; one that knows collects
// garbage harder instead.
//
// It reads /proc/self/cgroup and /proc/self/mountinfo to find the process's
// cgroup directories, cgroup v2 (memory.max) and v1 (memory.limit_in_bytes),
// and takes the lowest limit of the cgroup and its ancestors up to the
// mount's root: a container's limit is often set on a parent.
//
// Hand-written rather than a dependency: the rules are these few, they are
// table-tested here on both layouts, and the libraries that do it bring
// cgroup management code that an operator does not need.
//
// Everything reads through an fs.FS rooted at "/", so tests give it the
// files of any machine.
package memlimit
