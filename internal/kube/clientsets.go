package kube

import (
	"fmt"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
)

// Leases is the typed client of coordination.k8s.io/v1 Leases, for leader
// election and sharding: client-go's leader election takes its lock only
// as a typed client. NewClient builds it from the same config as the
// client's other requests (user agent, proxy, timeout, flow control and
// tracing), so that the operator's Lease traffic is its own like every
// other request; nil for clients made in tests without NewClient.
func (c *Client) Leases() coordinationv1.LeasesGetter { return c.leases }

// newLeases builds the Leases client from a config NewClient has prepared.
func newLeases(cfg *rest.Config) (coordinationv1.LeasesGetter, error) {
	lc, err := coordinationv1.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot create the Leases client: %w", err)
	}
	return lc, nil
}

// NewClientsets builds the typed clientset of the built-in APIs and the
// dynamic client that handlers get (kopfgo.Clients), from cfg as it is:
// the caller has put its flow control and tracing in cfg already. They are
// built here so that this package stays the only one that makes API
// clients.
func NewClientsets(cfg *rest.Config) (kubernetes.Interface, dynamic.Interface, error) {
	kc, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, nil, fmt.Errorf("building the typed clientset: %w", err)
	}
	dc, err := dynamic.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, nil, fmt.Errorf("building the dynamic client: %w", err)
	}
	return kc, dc, nil
}
