// Package kube is the only code that talks to the Kubernetes API: it loads
// credentials, discovers resources, lists and watches them for the
// informers, and applies the merge patches that handling cycles produce.
// Everything above it works on plain object trees. Where client-go's
// machinery must hold a client of its own type, kube builds it and the
// others receive it: the Leases client that leader election and sharding
// write with (Client.Leases), and the clientsets handed to handlers
// (NewClientsets). NewClient makes every client of an operator from one
// config, with the operator's user agent, proxy rule, timeout, flow control
// and tracing. No other non-test file builds an API client
// (TestOnlyKubeMakesAPIClients, beside the root's TestLayers).
//
// Lists, watches and patches take one path, in production and in tests: a
// REST client that decodes each response once (watch.go, compact.go,
// client.go), where client-go's dynamic client decoded each watch event
// four times. Gets, creates, updates and events go through the dynamic
// client, discovery through the discovery client. Tests fake the API
// below all of it: kubefake serves client-go's dynamic fake over HTTP to a
// Client that NewClient made, answering a watch from a resourceVersion as
// an API server does (what was written since, or 410 Expired), so that the
// reactor's scripted scenarios list, watch and patch through the
// production code.
//
// Watchers' informers hold every object of their resource for as long as
// it exists, so the form they hold it in is most of an operator's memory.
// With WatchOptions.Compact, lists and watches hand out *Compact objects
// (compact.go): the object's JSON as the API server sent it, managedFields
// cut out at the byte level, plus the namespace, name, uid and
// resourceVersion that the informer and the reactor read on every
// observation; the reactor decodes an object when a pass uses it. Decoded,
// a typical object took several times its JSON (a map per nested object, a
// header per string): with 20 000 objects of under 1 KB of JSON, decoded
// objects were 57 of the 75 MB of live heap, and kopfgo's RSS grew by 5.9
// KB per object (make bench -scenarios scale, 2026-11-25). Compact, the
// live heap was 37 MB and the growth 3.3 KB per object; with the JSON
// compressed against the first object of its resource (compact.go's
// codec, one per resource for all its namespaces and shards), 22 MB (README's Performance section has the tables). The codec
// learns the shapes objects take later (handled: the diff-base, results,
// conditions), against which they compress to a third of what they keep
// against an unhandled first object (TestCodecLearnsTheHandledShape).
package kube
