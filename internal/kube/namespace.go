package kube

import "k8s.io/client-go/tools/clientcmd"

// DefaultNamespace is the namespace of the credentials LoadConfig finds: the
// kubeconfig context's, else the pod's own when in a cluster, else
// "default". Kopf posts events about cluster-scoped objects there, for
// operators whose rights end at their own namespace.
func DefaultNamespace(kubeconfig, context string) string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}
