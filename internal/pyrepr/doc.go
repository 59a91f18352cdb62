// Package pyrepr renders JSON-like values (what unstructured objects hold:
// maps, slices, strings, numbers, booleans, nil) the way Python's repr()
// renders the same values as dicts, lists and tuples. Kopf's debug lines
// print objects and diffs with repr() ("Creation is in progress: {'apiVersion':
// 'kopf.dev/v1', ...}"); kopfgo prints them alike so that the lines read the
// same and log searches written for Kopf match.
//
// One difference cannot be avoided: Python dicts keep the order in which the
// API server sent the keys, Go maps keep none, so dict keys are sorted. At
// the top level of an object, the sorted order (apiVersion, kind, metadata,
// spec, status) is also the API server's.
package pyrepr
