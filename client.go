package kopfgo

import (
	"context"

	"k8s.io/client-go/rest"

	"github.com/kopfgo/kopfgo/internal/kube"
)

// RESTConfig returns the credentials the operator uses, from the ctx a
// handler receives, so that handlers can build their own clients (a typed
// clientset, a controller-runtime client) with the same identity. It returns
// a copy; nil outside of handlers.
func RESTConfig(ctx context.Context) *rest.Config {
	cfg := kube.ConfigFrom(ctx)
	if cfg == nil {
		return nil
	}
	return rest.CopyConfig(cfg)
}
