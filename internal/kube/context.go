package kube

import (
	"context"
	"sync"

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

type lazyClientKey struct{}

// lazyClient is a client built once, on first use, from the credentials
// of a ctx made outside the reactor: tests and programs that call handlers
// directly rarely need it, and then pay only once.
type lazyClient struct {
	cfg    *rest.Config
	once   sync.Once
	client *Client
	err    error
}

// WithConfigClient is WithConfig plus a client that ClientOf builds from
// cfg when first asked.
func WithConfigClient(ctx context.Context, cfg *rest.Config) context.Context {
	return context.WithValue(WithConfig(ctx, cfg), lazyClientKey{}, &lazyClient{cfg: cfg})
}

// ClientOf returns the operator's client (WithClient), else the one built
// from the credentials of WithConfigClient; nil and no error when ctx has
// neither.
func ClientOf(ctx context.Context) (*Client, error) {
	if c := ClientFrom(ctx); c != nil {
		return c, nil
	}
	l, _ := ctx.Value(lazyClientKey{}).(*lazyClient)
	if l == nil {
		return nil, nil
	}
	l.once.Do(func() { l.client, l.err = NewClient(l.cfg, ClientOptions{}) })
	return l.client, l.err
}
