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
	cfg, _, err := LoadConfigFrom(kubeconfig, context)
	return cfg, err
}

// LoadConfigFrom is LoadConfig that also says where the credentials came
// from: "via kubeconfig file" or "in cluster with service account", in the
// words of Kopf's log line "Client is configured …".
func LoadConfigFrom(kubeconfig, context string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("cannot load Kubernetes credentials (set KUBECONFIG, pass --kubeconfig, or run in a pod with a service account): %w", err)
	}
	// The loader falls back to the pod's service account only when no
	// kubeconfig names a cluster.
	source := "via kubeconfig file"
	if raw, err := loader.RawConfig(); err == nil && len(raw.Clusters) == 0 {
		source = "in cluster with service account"
	}
	return cfg, source, nil
}
