package kopfgo

import (
	"github.com/kopfgo/kopfgo/internal/cli"
	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
)

// Admission is the argument of validating and mutating handlers: the object
// under review (Object; the old one for deletions), Old and New, Operation,
// SubResource, DryRun, UserInfo, Headers, SSLPeer, Warnings to append to,
// and Patch for mutations (compat: admission-handlers).
type Admission = handlers.Admission

// AdmissionFunc is a validating or mutating handler. Returning an error
// rejects the request: an *AdmissionError's message and code, or any other
// error's message with code 500.
type AdmissionFunc = handlers.AdmissionFunc

// AdmissionSettings configure the webhook server and the managed webhook
// configurations (Settings.Admission; Kopf's settings.admission).
type AdmissionSettings = config.Admission

// WebhookServer is the operator's HTTPS server for the API server's
// admission calls (Settings.Admission.Server; Kopf's kopf.WebhookServer).
type WebhookServer = config.WebhookServer

// WebhookService is the Service through which the API server reaches the
// webhook server in a cluster (Settings.Admission.Service; Kopf's
// WebhookClientConfigService).
type WebhookService = config.WebhookService

// CertRotation says how long the certificates kept in
// Settings.Admission.CertSecret live and when they are replaced.
type CertRotation = config.CertRotation

// applyWebhookFlags applies --webhook-service, --webhook-secret and
// --webhook-goaway-chance (checked by the flags' validation already).
func applyWebhookFlags(a *AdmissionSettings, f *cli.RunFlags) {
	if f.WebhookService != "" {
		ns, name, port, _ := cli.ParseWebhookService(f.WebhookService)
		a.Service = &WebhookService{Name: name, Namespace: ns, Port: port}
	}
	if f.WebhookSecret != "" {
		a.CertSecret = f.WebhookSecret
	}
	if f.WebhookGoawayChance != 0 {
		a.GoawayChance = f.WebhookGoawayChance
	}
}

// AdmissionError rejects an admission request with its Message and HTTP
// Code, as `kubectl` shows them (Kopf's kopf.AdmissionError): return
// &kopfgo.AdmissionError{Message: "Change the field.", Code: 422}; Code 0
// means 500. Like PermanentError it is preferred over other errors when
// several handlers fail.
type AdmissionError = handlers.AdmissionError

// AdmissionOption configures a validating or mutating handler: ID, Param,
// the filters (Labels, Annotations, Field, Value, When), Operations,
// SubResource, Persistent, SideEffects, IgnoreFailures.
type AdmissionOption interface {
	applyAdmission(*handling.AdmissionHandler)
}

type admissionOption func(*handling.AdmissionHandler)

func (o admissionOption) applyAdmission(h *handling.AdmissionHandler) { o(h) }

// Operations restricts the webhook to these operations: "CREATE",
// "UPDATE", "DELETE", "CONNECT" (the managed configuration's rules).
// Default: all. Mutating handlers see deletions only when registered for
// "DELETE" alone, as in Kopf.
func Operations(ops ...string) AdmissionOption {
	return admissionOption(func(h *handling.AdmissionHandler) { h.Operations = append(h.Operations, ops...) })
}

// SubResource makes the handler serve a subresource ("status", "scale")
// instead of the main resource, or "*" for the resource and all its
// subresources. Default: the main resource only.
func SubResource(name string) AdmissionOption {
	return admissionOption(func(h *handling.AdmissionHandler) { h.SubResource = &name })
}

// Persistent keeps the handler's webhook in the managed configuration after
// the operator exits, so that requests fail (or are ignored, with
// IgnoreFailures) while it is down instead of passing unchecked.
func Persistent(on bool) AdmissionOption {
	return admissionOption(func(h *handling.AdmissionHandler) { h.Persistent = on })
}

// SideEffects declares that the handler has side effects, which it skips
// for dry runs (Admission.DryRun): sideEffects NoneOnDryRun instead of None.
func SideEffects(on bool) AdmissionOption {
	return admissionOption(func(h *handling.AdmissionHandler) { h.SideEffects = on })
}

// IgnoreFailures lets the API server admit requests when the webhook cannot
// be reached or fails (failurePolicy Ignore instead of Fail). A panic of
// the handler is such a failure: the call fails with HTTP 500 and the
// request is admitted; without IgnoreFailures a panic rejects the request
// with its message (compat: admission-handlers).
func IgnoreFailures(on bool) AdmissionOption {
	return admissionOption(func(h *handling.AdmissionHandler) { h.IgnoreFailures = on })
}

func (r Registrar) admission(kind handlers.AdmissionKind, resource string, fn AdmissionFunc, opts []AdmissionOption) {
	r.op.reg.AddAdmission(handling.AdmissionRegistration{Resource: resource, Kind: kind, Fn: fn, Configure: func(h *handling.AdmissionHandler) {
		for _, o := range opts {
			o.applyAdmission(h)
		}
	}})
}

// Validate registers a validating admission handler: the API server asks it
// before storing a change of the resource's objects, and an error rejects
// the change. All validating handlers of a request run; the first
// AdmissionError (or else the first error) is the answer. It needs
// Settings.Admission.Server.
func (r Registrar) Validate(resource string, fn AdmissionFunc, opts ...AdmissionOption) {
	r.admission(handlers.Validating, resource, fn, opts)
}

// Mutate registers a mutating admission handler: it changes objects before
// they are stored by writing into a.Patch (fields, and Patch.Fns for
// transformations); the changes of all mutating handlers of a request go
// back to the API server as one JSON patch. An error rejects the request.
func (r Registrar) Mutate(resource string, fn AdmissionFunc, opts ...AdmissionOption) {
	r.admission(handlers.Mutating, resource, fn, opts)
}
