package reactor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// checkFields checks the field paths of the handlers (On.Field and Field
// filters) against the openAPIV3Schema of their resources' CRDs: the API
// server prunes what the schema does not declare, so a path outside it
// never changes and its handler never runs, silently. Each such path is a
// warning naming the handler and the nearest declared field; with strict,
// an error. Built-in resources are not checked: their schemas are in the
// API server's OpenAPI documents, megabytes to fetch at every start for a
// check of names that the Go types of k8s.io/api already spell out.
// Without the CRDs (a 403, or none), nothing is checked.
func checkFields(ctx context.Context, client *kube.Client, reg *handling.Registry, served []resources.Resource, log *slog.Logger, strict bool) error {
	hs := reg.Changing()
	var errs []error
	for _, res := range served {
		var fielded []*handling.Handler
		for _, h := range handling.ForResource(hs, res) {
			if len(h.Field) > 0 {
				fielded = append(fielded, h)
			}
		}
		if len(fielded) == 0 || res.Group == "" {
			continue
		}
		crd, err := client.CRD(ctx, res.Plural+"."+res.Group)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Debug(fmt.Sprintf("The field paths of the handlers of %s are not checked: %v", res, err))
			continue
		}
		schema := resources.SchemaOf(crd, res.Version)
		for _, h := range fielded {
			known, near := resources.FieldInSchema(schema, h.Field)
			if known {
				continue
			}
			hint := ""
			if near != nil {
				hint = fmt.Sprintf(" (did you mean %s?)", strings.Join(near, "."))
			}
			path := strings.Join(h.Field, ".")
			if strict {
				errs = append(errs, fmt.Errorf("%w: handler %s: %w: %s in %s%s", handlers.ErrRegistration, h.ID, resources.ErrUnknownField, path, res, hint))
				continue
			}
			log.Warn(fmt.Sprintf("Handler %s: the field %s is not in the schema of %s%s; the API server drops fields outside it, so the handler never runs.", h.ID, path, res, hint))
		}
	}
	return errors.Join(errs...)
}
