package cluster

import (
	"bytes"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestRenderKubeconfig(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	for _, tc := range []struct {
		name     string
		ca       []byte
		insecure bool
	}{
		{name: "with CA", ca: ca},
		{name: "without CA", insecure: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := renderKubeconfig("https://127.0.0.1:6443", "s3cret", tc.ca)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := clientcmd.Load(data)
			if err != nil {
				t.Fatalf("the rendered kubeconfig does not load: %v\n%s", err, data)
			}
			if cfg.CurrentContext != contextName {
				t.Errorf("current context %q, want %q", cfg.CurrentContext, contextName)
			}
			rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
			if err != nil {
				t.Fatal(err)
			}
			want := restConfig("https://127.0.0.1:6443", "s3cret", tc.ca)
			if rc.Host != want.Host || rc.BearerToken != want.BearerToken {
				t.Errorf("host/token = %q/%q, want %q/%q", rc.Host, rc.BearerToken, want.Host, want.BearerToken)
			}
			if rc.Insecure != tc.insecure || want.Insecure != tc.insecure {
				t.Errorf("insecure: kubeconfig %v, rest config %v, want %v", rc.Insecure, want.Insecure, tc.insecure)
			}
			if !bytes.Equal(rc.CAData, tc.ca) || !bytes.Equal(want.CAData, tc.ca) {
				t.Errorf("CA data differs: kubeconfig %q, rest config %q", rc.CAData, want.CAData)
			}
			ns, _, err := clientcmd.NewDefaultClientConfig(*cfg, nil).Namespace()
			if err != nil || ns != "default" {
				t.Errorf("namespace %q (%v), want default", ns, err)
			}
		})
	}
}

func TestRESTConfigIsACopy(t *testing.T) {
	c := &Cluster{APIServerURL: "https://127.0.0.1:1", Token: "t", caData: []byte("ca")}
	rc := c.RESTConfig()
	rc.CAData[0] = 'X'
	if string(c.caData) != "ca" {
		t.Fatal("RESTConfig shares the CA bytes with the cluster; a caller's change would leak into every later config")
	}
}
