// Package admission serves the validating and mutating handlers to the API
// server (Kopf's admission engine and its WebhookServer): a TLS server that
// decodes AdmissionReviews, runs the handlers and answers with the verdict
// and, for mutations, an RFC 6902 JSON patch computed by jsondiff; the
// certificates it serves (generated at start, or files read again when they
// change); the webhook configurations the operator manages itself; and,
// for a sharded operator, the built-in webhooks that label new objects
// with their shards (ShardLabelling).
//
// It sits above handlers (which run the handlers of one request) and
// internal/kube (which makes the only API calls: discovery, creating and
// patching the configurations), and below the root package, whose Run
// starts it.
//
// The shard label's webhook is called for every object created, on the one
// replica the configuration names, so it is answered apart from the
// general path (shardRule.answer): of the review it decodes only the
// objects' names, namespaces and labels, and it writes its one "add"
// operation itself (the same bytes jsondiff would give) instead of
// applying the patch to a copy of the object and diffing the two. Measured
// on the scale-out bench's review (BenchmarkShardLabelReview): 80 µs,
// 24 kB and 481 allocations per review on the general path, 21 µs, 2.1 kB
// and 44 allocations on this one; what is left is mostly encoding/json
// scanning the review. TestShardLabellingDirectAnswerIsTheGeneralOne keeps
// the two paths' answers the same.
package admission
