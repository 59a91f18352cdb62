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
package admission
