package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/wI2L/jsondiff"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// transformAttempts bounds the retries of a transformation whose object
// keeps changing under it.
const transformAttempts = 10

// Transform applies the patch functions (Kopf's patch.fns) to the object's
// latest state and sends the difference as a JSON patch (jsondiff) that
// starts with a test of metadata.resourceVersion: a merge patch of a list
// would overwrite another writer's concurrent change of it, a guarded JSON
// patch fails instead, and the transformation is applied again to the newer
// object. With a status subresource, the status operations go to it, guarded
// by the version the main patch left. It returns the last resourceVersion
// written; "" when the functions changed nothing.
func (c *Client) Transform(ctx context.Context, res resources.Resource, namespace, name string, fns []func(map[string]any) error) (string, error) {
	for attempt := 1; ; attempt++ {
		cur, err := c.Get(ctx, res, namespace, name)
		if err != nil {
			return "", err
		}
		after := dicts.DeepCopyMap(cur.Object)
		for i, fn := range fns {
			if fn == nil {
				continue
			}
			if err := fn(after); err != nil {
				return "", fmt.Errorf("patch function %d: %w", i, err)
			}
		}
		ops, err := jsondiff.Compare(cur.Object, after)
		if err != nil {
			return "", fmt.Errorf("cannot compute the JSON patch: %w", err)
		}
		if len(ops) == 0 {
			return "", nil
		}
		var main, status jsondiff.Patch
		for _, op := range ops {
			if res.HasStatus() && (op.Path == "/status" || strings.HasPrefix(op.Path, "/status/")) {
				status = append(status, op)
			} else {
				main = append(main, op)
			}
		}
		rv := cur.GetResourceVersion()
		conflict := false
		for _, part := range []struct {
			ops jsondiff.Patch
			sub string
		}{{main, ""}, {status, "status"}} {
			if len(part.ops) == 0 {
				continue
			}
			guarded := append(jsondiff.Patch{{Type: jsondiff.OperationTest, Path: "/metadata/resourceVersion", Value: rv}}, part.ops...)
			data, err := json.Marshal(guarded)
			if err != nil {
				return "", fmt.Errorf("cannot encode the JSON patch: %w", err)
			}
			var subs []string
			if part.sub != "" {
				subs = []string{part.sub}
			}
			var next string
			err = c.retry(ctx, func() string { return c.describe("PATCH", res, namespace, name, part.sub) }, func() error {
				obj, err := c.resource(res, namespace).Patch(ctx, name, types.JSONPatchType, data, metav1.PatchOptions{}, subs...)
				if err == nil {
					next = obj.GetResourceVersion()
				}
				return err
			})
			switch {
			case apierrors.IsNotFound(err):
				return "", ErrGone
			case apierrors.IsConflict(err) || apierrors.IsInvalid(err) || isTestFailed(err):
				conflict = true
			case err != nil:
				verb := "patch"
				if part.sub != "" {
					verb = verbPatchStatus
				}
				return "", explain(err, verb, res, namespace, name)
			}
			if conflict {
				break
			}
			rv = next
		}
		if !conflict {
			return rv, nil
		}
		if attempt >= transformAttempts {
			return "", fmt.Errorf("cannot apply the patch functions: the object keeps changing (%d attempts)", attempt)
		}
	}
}

// isTestFailed: the API server answers a failed "test" operation with 422.
func isTestFailed(err error) bool {
	var st apierrors.APIStatus
	return errors.As(err, &st) && st.Status().Code == 422
}
