package kube

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// LoadConfig finds the cluster credentials the way kubectl does: an explicit
// kubeconfig path, else KUBECONFIG or ~/.kube/config, else the in-cluster
// service account.
func LoadConfig(kubeconfig, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("cannot load Kubernetes credentials (set KUBECONFIG, pass --kubeconfig, or run in a pod with a service account): %w", err)
	}
	return cfg, nil
}
