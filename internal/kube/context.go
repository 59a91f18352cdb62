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

type clientKey struct{}

// WithClient lets handlers reach the operator's client through ctx, so
// that their requests (ServerSideApply) pass its flow control and retries.
func WithClient(ctx context.Context, c *Client) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

// ClientFrom returns the client stored by WithClient, or nil.
func ClientFrom(ctx context.Context) *Client {
	c, _ := ctx.Value(clientKey{}).(*Client)
	return c
}
