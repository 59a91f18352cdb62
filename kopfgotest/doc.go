// Package kopfgotest is the test kit of kopfgo operators: Kopf's KopfRunner
// and more, for Go's testing package.
//
//   - A real cluster: under Main, the first test that asks for it (Cluster,
//     Namespace or Run) starts etcd and kube-apiserver for the whole test
//     binary and points KUBECONFIG to it; a run of unit tests only starts
//     nothing. The servers are built once per machine from the Go module
//     proxy into ~/.cache/kopfgo, best with `kopfgo testenv` before the
//     first go test: a test whose -timeout cannot fit the build fails at
//     once saying so. This works from any module: the servers' sources come
//     with kopfgo.
//   - An in-process runner: Run(t, op, "-n", ns) runs an operator on that
//     cluster with the command line of `kopfgo run`, waits until it is
//     ready, exposes its log lines, and stops it when the test ends (or at
//     Stop, which returns its exit error).
//   - Unit helpers build the argument of every kind of handler from bodies
//     (NewChange, NewUpdate, NewDelete, NewResume, NewFieldChange, NewEvent,
//     NewObject, NewAdmission, NewSpawn, NewActivity; NewTyped and
//     NewTypedField for typed handlers), so that a handler is called as a
//     plain function, without a cluster; what it wrote is in its Patch
//     (c.Patch.Map()) and its result is what it returns.
package kopfgotest
