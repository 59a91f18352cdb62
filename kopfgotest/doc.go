// Package kopfgotest is the test kit of kopfgo operators: Kopf's KopfRunner
// and more, for Go's testing package.
//
//   - A real cluster: Main starts etcd and kube-apiserver (built once per
//     machine from the Go module proxy by package e2e/cluster, into
//     ~/.cache/kopfgo) for a whole test binary and points KUBECONFIG to it;
//     Cluster returns it. This works from any module: the servers' sources
//     come with kopfgo.
//   - An in-process runner: Run(t, op, "-n", ns) runs an operator on that
//     cluster with the command line of `kopfgo run`, waits until it is
//     ready, exposes its log lines, and stops it when the test ends (or at
//     Stop, which returns its exit error).
//   - Unit helpers: NewChange, NewUpdate, NewSpawn and NewActivity build the
//     argument of a handler from a body, so that a handler is called as a
//     plain function, without a cluster; what it wrote is in its Patch
//     (c.Patch.Map()) and its result is what it returns.
package kopfgotest
