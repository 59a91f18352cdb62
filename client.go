package kopfgo

import (
	"context"
	"sync"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kopfgo/kopfgo/internal/kube"
)

// RESTConfig returns the credentials the operator uses, from the ctx a
// handler receives, so that handlers can build clients of their own (a
// controller-runtime client, a generated clientset of a CRD) with the same
// identity. It returns a copy; nil where there are no credentials yet
// (startup and login handlers). Prefer Clients for the usual clients.
func RESTConfig(ctx context.Context) *rest.Config {
	cfg := kube.ConfigFrom(ctx)
	if cfg == nil {
		return nil
	}
	return rest.CopyConfig(cfg)
}

// Clients are the operator's ready-made clients, with its identity: a typed
// clientset of the built-in APIs, a dynamic client for any resource (custom
// ones included), and the REST config they are made from. Handlers, daemons,
// timers, event and index handlers, probe and cleanup activities get them
// from their ctx: kopfgo.ClientsFrom(ctx).Kube.CoreV1().Pods(ns).Create(...).
//
// They are built once per operator run, when first asked for, and shared by
// every handler. Requests go through the operator's credentials: when a 401
// makes the login handlers run again, the same clients carry the new
// credentials from the next request on, so there is nothing to rebuild.
type Clients struct {
	Config  *rest.Config
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
}

// ClientsFrom returns the operator's clients from a handler's ctx, or nil
// where there are no credentials yet (startup and login handlers) and
// outside of handlers. It panics only if client-go cannot build a client
// from the operator's own config, which the operator already uses.
func ClientsFrom(ctx context.Context) *Clients {
	box, _ := ctx.Value(clientsKey{}).(*clientsBox)
	if box == nil {
		return nil
	}
	return box.get()
}

type clientsKey struct{}

// clientsBox builds the clients once, lazily: operators that never ask for
// them pay nothing.
type clientsBox struct {
	cfg     *rest.Config
	once    sync.Once
	clients *Clients
}

func (b *clientsBox) get() *Clients {
	b.once.Do(func() {
		c, err := NewClients(b.cfg)
		if err != nil {
			panic(err) // the config is the one the operator runs on
		}
		b.clients = c
	})
	return b.clients
}

// NewClients builds the clients from a REST config: for tests and for
// programs that want the same set outside an operator.
func NewClients(cfg *rest.Config) (*Clients, error) {
	kc, dc, err := kube.NewClientsets(cfg)
	if err != nil {
		return nil, err
	}
	return &Clients{Config: rest.CopyConfig(cfg), Kube: kc, Dynamic: dc}, nil
}

// WithClients returns ctx carrying the credentials and clients of cfg, as
// the ctx of a running operator's handlers does: for calling handlers in
// unit tests (kopfgotest does) and for programs that call them directly.
// hierarchies.Apply finds its client there too.
func WithClients(ctx context.Context, cfg *rest.Config) context.Context {
	return context.WithValue(kube.WithConfigClient(ctx, cfg), clientsKey{}, &clientsBox{cfg: cfg})
}
