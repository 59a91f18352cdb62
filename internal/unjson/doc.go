// Package unjson decodes JSON into the unstructured form Kubernetes clients
// use: map[string]any, []any, string, int64 for integers, float64 for other
// numbers, bool and nil. The values are exactly those sigs.k8s.io/json's
// UnmarshalCaseSensitivePreserveInts produces, which unstructured objects
// hold (a differential fuzz test keeps it so), and so are the inputs it
// rejects.
//
// It exists because decoding watch events and lists is most of an
// operator's own CPU time and its decoded objects most of its memory.
// client-go scans each watch event four times (to frame it, to decode the
// WatchEvent envelope, to sniff apiVersion and kind, then to decode the
// object, by reflection) and allocates every key of every object anew,
// though a cache of ten thousand objects repeats the same few hundred keys.
// This package frames a stream's values with a cheap scan and decodes each
// in one pass without reflection; it shares one copy of each key (and of
// short repeated string values) among the objects of a list or a stream,
// and makes each map and slice at its final size. It can also hand out a
// list's items one by one as they arrive, so that a list response of tens
// of megabytes is never held whole.
//
// It also hands out values undecoded, as their bytes (DecodeRaw,
// DecodeStreamingRaw), and walks an object's members without decoding
// their values (Members): watchers keep objects as JSON, which takes a
// fraction of the decoded form's memory, and read from the bytes only the
// few metadata fields they need on every observation (internal/kube's
// compact objects).
package unjson
