// Package inspect explains, object by object, where an operator's handling
// stands, from what Kopf-style operators leave on the objects themselves: the
// per-handler progress records, the diff-base and the finalizer.
//
// It exists for `kopfgo inspect`, which a user runs with nothing but a
// kubeconfig when an object seems stuck: no operator needs to be running, and
// objects handled by Kopf read the same as those handled by kopfgo, because
// the records are read with the persistence and diffbase packages that write
// them. The analysis is pure (a body and a time in, a report out); fetching
// the objects is the command's business.
package inspect
