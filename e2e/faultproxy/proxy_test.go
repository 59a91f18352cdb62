package faultproxy

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// upstream is a TLS server answering every GET with an empty ConfigMap and
// recording the Authorization header it got.
func upstream(t *testing.T) (*rest.Config, *string) {
	var auth string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"ns"}}`)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return &rest.Config{Host: srv.URL, BearerToken: "secret", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, &auth
}

func TestForwardsAndInjects(t *testing.T) {
	cfg, auth := upstream(t)
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	k := kubernetes.NewForConfigOrDie(p.Config(cfg))
	get := func() error {
		_, err := k.CoreV1().ConfigMaps("ns").Get(context.Background(), "cm", metav1.GetOptions{})
		return err
	}
	if err := get(); err != nil {
		t.Fatalf("forwarded GET: %v", err)
	}
	if *auth != "Bearer secret" {
		t.Errorf("upstream got Authorization %q, want the client's", *auth)
	}

	r := p.Add(&Rule{Method: "GET", PathContains: "/configmaps/", Status: http.StatusConflict, Times: 1})
	if err := get(); !apierrors.IsConflict(err) {
		t.Errorf("injected 409: got %v", err)
	}
	if err := get(); err != nil {
		t.Errorf("the rule was for one request only: %v", err)
	}
	if r.Taken() != 1 {
		t.Errorf("rule taken %d times, want 1", r.Taken())
	}
	reset := p.Add(&Rule{Method: "GET", Action: Reset, Times: 1})
	get() // fails, or succeeds if client-go retries the reset GET itself
	if reset.Taken() != 1 {
		t.Errorf("reset rule taken %d times, want 1", reset.Taken())
	}
	if err := get(); err != nil {
		t.Errorf("after the reset: %v", err)
	}
	if fwd, inj := p.Counts(); fwd < 2 || inj < 2 {
		t.Errorf("counts: forwarded %d, injected %d", fwd, inj)
	}
}
