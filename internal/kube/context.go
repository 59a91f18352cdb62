package kube

import (
	"context"

	"k8s.io/client-go/rest"
)

type configKey struct{}

// WithConfig lets handlers reach the operator's credentials through ctx.
func WithConfig(ctx context.Context, cfg *rest.Config) context.Context {
	return context.WithValue(ctx, configKey{}, cfg)
}

// ConfigFrom returns the credentials stored by WithConfig, or nil.
func ConfigFrom(ctx context.Context) *rest.Config {
	cfg, _ := ctx.Value(configKey{}).(*rest.Config)
	return cfg
}
