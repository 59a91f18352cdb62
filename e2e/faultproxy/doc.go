// Package faultproxy is an HTTP proxy between an operator and the API
// server that injects the faults a real cluster produces now and then:
// error answers (403, 404, 409, 410, 422, 429, 500, 503 with a proper
// Status body), stalled, dropped and reset connections, for the requests a
// rule matches (by verb, path, subresource, watch or not). The bad-input
// tests use it to see what the user observes on each kind of failure, the
// chaos run to keep the operator under fire.
//
// The proxy listens on HTTPS on the loopback interface, with a certificate
// of its own (Proxy.CA; Proxy.Config sets it), and forwards to the API server
// over TLS, trusting the cluster's CA. (Plain HTTP would not do: client-go
// sends a kubeconfig's credentials over TLS only.) It passes the client's
// Authorization header on unchanged, so RBAC sees the operator's own
// identity: point a rest.Config at URL() with the same bearer token.
package faultproxy
