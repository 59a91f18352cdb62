package handlers

import (
	"context"
	"crypto/x509"
	"net/http"

	"github.com/kopfgo/kopfgo/diffbase"
)

// AdmissionKind says which admission webhook a handler serves.
type AdmissionKind string

// The admission kinds, named as in the webhook configurations.
const (
	Validating AdmissionKind = "validating"
	Mutating   AdmissionKind = "mutating"
)

// Admission is the argument of validating and mutating handlers: one
// admission request as the API server sends it (compat: admission-handlers).
// Object is the new object, or the old one for DELETE; Old and New are nil
// when the request has none (New for DELETE, Old for CREATE).
type Admission struct {
	Object
	Old, New map[string]any
	// Diff is between Old and New, in Kopf's format.
	Diff diffbase.Diff
	// Operation is CREATE, UPDATE, DELETE or CONNECT.
	Operation string
	// SubResource is "" for the main resource, or e.g. "status".
	SubResource string
	// DryRun: the request changes nothing; a handler with side effects
	// must not make them (and must be registered with SideEffects).
	DryRun bool
	// UserInfo is the requesting user as the API server reports it
	// (username, uid, groups, extra).
	UserInfo map[string]any
	// Headers are the HTTP headers of the API server's call (not the
	// user's); SSLPeer is the API server's client certificate, nil when it
	// sent none.
	Headers http.Header
	SSLPeer *x509.Certificate
	// Warnings are sent back to the requesting client (kubectl shows them);
	// append to them.
	Warnings []string
	// Webhook is the handler id the request was addressed to (the URL's
	// last segment), "" when it named none.
	Webhook string
	// Kind is the webhook's kind: Validating or Mutating.
	Kind AdmissionKind
}

// AdmissionFunc is a validating or mutating handler. An error rejects the
// request: an *AdmissionError with its message and code, any other with its
// message and code 500. Mutations go into a.Patch (fields and Fns).
type AdmissionFunc func(ctx context.Context, a *Admission) error

// AdmissionError rejects an admission request with a message and an HTTP
// code that the requesting client shows (Kopf's kopf.AdmissionError). It is
// permanent: errors.Is(err, &PermanentError{}) holds.
type AdmissionError struct {
	Message string
	// Code is the HTTP status code; 0 means 500, as in Kopf.
	Code int
}

func (e *AdmissionError) Error() string { return e.Message }

// Is makes an AdmissionError a PermanentError, as in Kopf.
func (e *AdmissionError) Is(target error) bool {
	_, ok := target.(*PermanentError)
	return ok
}
