// Package admission validates and mutates KopfExamples in admission: the
// API server calls the operator's webhook server (HTTPS, a self-signed
// certificate generated at start) through webhook configurations that the
// operator creates and keeps up to date itself. Run:
//
//	kopfgo run ./examples/17-admission --verbose
package admission

import (
	"context"
	"fmt"

	"github.com/kopfgo/kopfgo"
)

func Register(r kopfgo.Registrar) {
	r.Startup(config, kopfgo.ID("config"))
	r.Validate("kex", authhook, kopfgo.ID("authhook"))
	r.Validate("kex", validate1, kopfgo.ID("validate1"))
	r.Validate("kex", validate2, kopfgo.ID("validate2"), kopfgo.Field("spec.field"), kopfgo.Value("not-allowed"))
	r.Validate("kex", validateSubresources, kopfgo.ID("validate_subresources"), kopfgo.SubResource("*"))
	r.Mutate("kex", mutate1, kopfgo.ID("mutate1"), kopfgo.Labels{"somelabel": "somevalue"})
}

// config chooses the webhook server, as Kopf's example does at startup. Its
// final choice, kopf.WebhookAutoServer, is a plain local server wherever the
// cluster is not k3d or minikube; kopfgo has that one (a server reachable
// from a local cluster), with Kopf's defaults: all interfaces, a free port,
// a generated certificate for 127.0.0.1. With certificate files instead:
//
//	&kopfgo.WebhookServer{CertFile: "cert.pem", KeyFile: "key.pem", Port: 1234}
func config(ctx context.Context, a *kopfgo.Activity) error {
	a.Settings.Admission.Server = &kopfgo.WebhookServer{}
	a.Settings.Admission.Managed = "auto.kopf.dev"
	return nil
}

func authhook(ctx context.Context, a *kopfgo.Admission) error {
	userAgent := a.Headers.Get("User-Agent")
	if userAgent == "" {
		userAgent = "(unidentified)"
	}
	a.Warnings = append(a.Warnings, "Accessing as user-agent: "+userAgent)
	switch {
	case a.SSLPeer == nil:
		a.Warnings = append(a.Warnings, "SSL peer is not identified.")
	case a.SSLPeer.Subject.CommonName != "":
		a.Warnings = append(a.Warnings, fmt.Sprintf("SSL peer is %s.", a.SSLPeer.Subject.CommonName))
	default:
		a.Warnings = append(a.Warnings, "SSL peer's common name is absent.")
	}
	return nil
}

func validate1(ctx context.Context, a *kopfgo.Admission) error {
	if !a.DryRun && a.Spec["field"] == "wrong" {
		return &kopfgo.AdmissionError{Message: "Meh! I don't like it. Change the field."}
	}
	return nil
}

func validate2(ctx context.Context, a *kopfgo.Admission) error {
	return &kopfgo.AdmissionError{Message: "I'm too lazy anyway. Go away!", Code: 555}
}

func validateSubresources(ctx context.Context, a *kopfgo.Admission) error {
	spec, status := a.Spec["field"], a.Status["field"]
	switch {
	case a.SubResource == "status" && status != spec:
		return &kopfgo.AdmissionError{Message: "status.field MUST be equal to spec.field!"}
	case a.SubResource == "" && status != spec:
		a.Warnings = append(a.Warnings, fmt.Sprintf(
			"Also update status.field to match spec.field: %s != %s", pyRepr(spec), pyRepr(status)))
	}
	return nil
}

func mutate1(ctx context.Context, a *kopfgo.Admission) error {
	a.Patch.Spec()["injected"] = 123
	return nil
}

// pyRepr writes a value as Kopf's message has it ({!r}): strings quoted,
// a missing value None.
func pyRepr(v any) string {
	switch t := v.(type) {
	case nil:
		return "None"
	case string:
		return "'" + t + "'"
	}
	return fmt.Sprint(v)
}
