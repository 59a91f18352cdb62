package cluster

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// contextName names the cluster, user and context in the generated kubeconfig.
const contextName = "kopfgo-e2e"

// renderKubeconfig returns a kubeconfig for a token-authenticated admin. With
// caData the server certificate is verified; without it (the apiserver's
// self-signed certificate was not readable) TLS verification is skipped, which
// is acceptable for a throwaway loopback cluster.
func renderKubeconfig(server, token string, caData []byte) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cl := clientcmdapi.NewCluster()
	cl.Server = server
	if len(caData) > 0 {
		cl.CertificateAuthorityData = caData
	} else {
		cl.InsecureSkipTLSVerify = true
	}
	cfg.Clusters[contextName] = cl
	user := clientcmdapi.NewAuthInfo()
	user.Token = token
	cfg.AuthInfos[contextName] = user
	kctx := clientcmdapi.NewContext()
	kctx.Cluster = contextName
	kctx.AuthInfo = contextName
	kctx.Namespace = "default"
	cfg.Contexts[contextName] = kctx
	cfg.CurrentContext = contextName
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("rendering the kubeconfig: %w", err)
	}
	return data, nil
}

// restConfig builds the client configuration equivalent to renderKubeconfig's
// output. The client-side rate limit is raised from client-go's 5 QPS because
// tests create objects in bursts against a local, otherwise idle apiserver.
func restConfig(server, token string, caData []byte) *rest.Config {
	cfg := &rest.Config{
		Host:        server,
		BearerToken: token,
		QPS:         100,
		Burst:       200,
	}
	if len(caData) > 0 {
		cfg.TLSClientConfig.CAData = append([]byte(nil), caData...)
	} else {
		cfg.TLSClientConfig.Insecure = true
	}
	return cfg
}
