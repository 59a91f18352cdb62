package handling

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/patch"
)

// The operations of admission requests (Kopf's reviews.Operation).
var admissionOperations = []string{"CREATE", "UPDATE", "DELETE", "CONNECT"}

// AdmissionHandler is one registered validating or mutating handler. Of the
// embedded Handler, only the id, param and filters apply: webhooks are
// answered once, never retried.
type AdmissionHandler struct {
	Handler
	Kind handlers.AdmissionKind
	Fn   handlers.AdmissionFunc
	// Operations restrict the webhook's rules; empty: all ("*").
	Operations []string
	// SubResource: nil for the main resource only, "*" for all of its
	// subresources and the main resource, or one subresource.
	SubResource *string
	// Persistent webhooks stay in the managed configurations after the
	// operator exits.
	Persistent bool
	// SideEffects: the handler has side effects, which it skips on dry
	// runs (sideEffects: NoneOnDryRun instead of None).
	SideEffects bool
	// IgnoreFailures: the API server admits the request when the webhook
	// cannot be called or fails (failurePolicy: Ignore instead of Fail).
	IgnoreFailures bool
	// Builtin is the rule of one of kopfgo's own handlers (the shard
	// label's, internal/admission), which the webhook server answers
	// without the general path when a request names the handler; Fn does
	// the same among the others in a request that names none. Its success
	// is written at DEBUG, not INFO: it runs for every object created.
	Builtin any
}

// AdmissionRegistration is what the public API hands over for one
// validating or mutating handler.
type AdmissionRegistration struct {
	Resource  string
	Kind      handlers.AdmissionKind
	Fn        handlers.AdmissionFunc
	Configure func(*AdmissionHandler)
}

// AddAdmission validates and records a validating or mutating handler.
func (r *Registry) AddAdmission(reg AdmissionRegistration) {
	a := &AdmissionHandler{Kind: reg.Kind, Fn: reg.Fn}
	if reg.Configure != nil {
		reg.Configure(a)
	}
	call := "On.Validate"
	if reg.Kind == handlers.Mutating {
		call = "On.Mutate"
	}
	what, errs := a.validate(registration{
		call: fmt.Sprintf("%s(%q)", call, reg.Resource), noun: "handler", fn: reg.Fn,
		resource: reg.Resource, scoped: true,
		check: func() []error {
			var errs []error
			for _, op := range a.Operations {
				if op != "*" && !slices.Contains(admissionOperations, op) {
					errs = append(errs, fmt.Errorf("unknown operation %q: use CREATE, UPDATE, DELETE, CONNECT or *", op))
				}
			}
			if a.SubResource != nil && *a.SubResource == "" {
				errs = append(errs, errors.New(`an empty SubResource: leave it out for the main resource, or use "*" for all`))
			}
			return errs
		},
	})
	// One namespace of ids for all admission handlers: an id is a webhook's
	// URL path and name, whichever resource it serves.
	if r.record("admission", resources.Selector{}, what, &a.Handler, errs) == nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.admissions = append(r.admissions, a)
	}
}

// Admissions returns the validating and mutating handlers in registration
// order.
func (r *Registry) Admissions() []*AdmissionHandler {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*AdmissionHandler(nil), r.admissions...)
}

// AdmissionRequest is one decoded admission request, with what the server
// knows about the call.
type AdmissionRequest struct {
	// Kind is the webhook kind if known (from the URL or the
	// configuration); "" serves the handlers of both kinds, as Kopf does
	// for a request that names no webhook.
	Kind      handlers.AdmissionKind
	Webhook   string
	Resource  resources.Resource
	Operation string
	// SubResource is "" for the main resource.
	SubResource string
	DryRun      bool
	UserInfo    map[string]any
	Old, New    map[string]any
	Headers     http.Header
	SSLPeer     *x509.Certificate
	Logger      *slog.Logger
	Memo        *handlers.Memo
}

// AdmissionOutcome is what the handlers of one request decided.
type AdmissionOutcome struct {
	// Err is the error chosen for the answer, nil if all handlers
	// succeeded: an AdmissionError first, then other permanent errors,
	// then temporary ones, then any other, the earliest of each (Kopf's
	// order).
	Err error
	// Patch holds the mutating handlers' changes to Body; Body is the
	// object the request is about.
	Patch    *patch.Patch
	Body     map[string]any
	Warnings []string
	// Invoked is the number of handlers that ran.
	Invoked int
	// Failure is the panic of a handler registered with IgnoreFailures:
	// the webhook itself failed, and the API server's failurePolicy
	// (Ignore) decides, instead of a rejection.
	Failure error
}

// ServeAdmission runs every handler of hs that serves the request, one after
// another in registration order, as Kopf runs them all at once: every one
// runs whatever the others did, and the mutations of all go into one patch
// (compat: admission-handlers).
func ServeAdmission(ctx context.Context, hs []*AdmissionHandler, req AdmissionRequest) AdmissionOutcome {
	body := req.New
	if body == nil {
		body = req.Old
	}
	out := AdmissionOutcome{Patch: &patch.Patch{}, Body: body}
	cause := &Cause{Body: body, Resource: req.Resource, Patch: out.Patch, Logger: req.Logger, Memo: req.Memo}
	var diff Diff
	if req.Old != nil || req.New != nil {
		diff = DiffOf(anyOrNil(req.Old), anyOrNil(req.New))
	}
	var errs []error
	for _, h := range hs {
		if !h.Serves(req) || !h.MatchesObject(cause) {
			continue
		}
		arg := &handlers.Admission{
			Object: *cause.Object(), Old: req.Old, New: req.New, Diff: diff,
			Operation: req.Operation, SubResource: req.SubResource, DryRun: req.DryRun,
			UserInfo: req.UserInfo, Headers: req.Headers, SSLPeer: req.SSLPeer,
			Warnings: out.Warnings, Webhook: req.Webhook, Kind: h.Kind,
		}
		arg.Param = h.Param
		out.Invoked++
		err := safeAdmission(ctx, h.Fn, arg)
		out.Warnings = arg.Warnings
		if err != nil {
			var pnc *handlers.PanicError
			if errors.As(err, &pnc) {
				req.Logger.Debug(fmt.Sprintf("Handler '%s' panicked at:\n%s", h.ID, pnc.Stack))
				if h.IgnoreFailures && out.Failure == nil {
					out.Failure = fmt.Errorf("handler '%s' failed: %w", h.ID, err)
				}
			}
			// Kopf's lines, its errors mode being permanent for webhooks.
			var temp *handlers.TemporaryError
			switch {
			case errors.Is(err, &handlers.PermanentError{}):
				req.Logger.Error(fmt.Sprintf("Handler '%s' failed permanently: %s", h.ID, err))
			case errors.As(err, &temp):
				req.Logger.Error(fmt.Sprintf("Handler '%s' failed temporarily: %s", h.ID, err))
			default:
				req.Logger.Error(fmt.Sprintf("Handler '%s' failed with an exception. Will stop.", h.ID), "error", err.Error())
			}
			errs = append(errs, err)
			continue
		}
		if h.Builtin != nil {
			req.Logger.Debug(fmt.Sprintf("Handler '%s' succeeded.", h.ID))
		} else {
			req.Logger.Info(fmt.Sprintf("Handler '%s' succeeded.", h.ID))
		}
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b error) int { return cmp.Compare(errorRank(a), errorRank(b)) })
		out.Err = errs[0]
	}
	return out
}

func anyOrNil(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

// errorRank orders the errors as Kopf prefers them for the answer.
func errorRank(err error) int {
	var (
		adm  *handlers.AdmissionError
		temp *handlers.TemporaryError
	)
	switch {
	case errors.As(err, &adm):
		return 0
	case errors.Is(err, &handlers.PermanentError{}):
		return 1
	case errors.As(err, &temp):
		return 2
	}
	return 9
}

// Serves reports whether the handler serves the request, before its
// filters: the kind, the webhook addressed, the resource and subresource;
// a mutating handler serves a deletion only if it is registered for
// deletions alone (Kopf's rule: a deleted object has nothing to mutate).
func (h *AdmissionHandler) Serves(req AdmissionRequest) bool {
	if req.Kind != "" && req.Kind != h.Kind {
		return false
	}
	if req.Webhook != "" && req.Webhook != h.ID {
		return false
	}
	if h.Kind == handlers.Mutating && req.Operation == "DELETE" && !(len(h.Operations) > 0 && onlyDelete(h.Operations)) {
		return false
	}
	if !h.Selector.Matches(req.Resource) {
		return false
	}
	switch {
	case h.SubResource == nil:
		return req.SubResource == ""
	case *h.SubResource == "*":
		return true
	default:
		return *h.SubResource == req.SubResource
	}
}

func onlyDelete(ops []string) bool {
	for _, op := range ops {
		if op != "DELETE" {
			return false
		}
	}
	return true
}

func safeAdmission(ctx context.Context, fn handlers.AdmissionFunc, arg *handlers.Admission) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &handlers.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(ctx, arg)
}
