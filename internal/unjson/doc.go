// Package unjson decodes JSON into the unstructured form Kubernetes clients
// use: map[string]any, []any, string, int64 for integers, float64 for other
// numbers, bool and nil — the values sigs.k8s.io/json's
// UnmarshalCaseSensitivePreserveInts produces, which unstructured objects
// hold.
//
// It exists because decoding watch events and lists is most of an
// operator's own CPU time: client-go scans each event several times (to
// frame it, to find its kind, to decode the envelope, then the object).
// This package frames and decodes each value once.
package unjson
