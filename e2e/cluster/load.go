package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// RequestKey is one series of the apiserver's apiserver_request_total:
// the request's verb (GET, LIST, WATCH, PATCH, ...), resource, subresource
// and HTTP status code.
type RequestKey struct {
	Verb, Resource, Subresource, Code string
}

// RequestCounts are the apiserver's own count of the requests it answered,
// by RequestKey. The apiserver counts what it rejects too: a 429 of its
// in-flight limits or of API Priority and Fairness, a 504 of a request
// that timed out. Taken before and after a phase, their difference (Sub)
// is what the phase's clients got, whatever they say of themselves.
type RequestCounts map[RequestKey]int64

// Metrics is the apiserver's /metrics, in Prometheus' text format, read
// as the admin.
func (c *Cluster) Metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	rt, err := rest.TransportFor(c.RESTConfig())
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.APIServerURL+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the apiserver's /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading the apiserver's /metrics: %s", resp.Status)
	}
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing the apiserver's /metrics: %w", err)
	}
	return families, nil
}

// RequestCounts reads apiserver_request_total from the apiserver's
// /metrics, as the admin.
func (c *Cluster) RequestCounts(ctx context.Context) (RequestCounts, error) {
	families, err := c.Metrics(ctx)
	if err != nil {
		return nil, err
	}
	out := RequestCounts{}
	fam, ok := families["apiserver_request_total"]
	if !ok {
		return out, nil
	}
	for _, m := range fam.GetMetric() {
		var k RequestKey
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "verb":
				k.Verb = l.GetValue()
			case "resource":
				k.Resource = l.GetValue()
			case "subresource":
				k.Subresource = l.GetValue()
			case "code":
				k.Code = l.GetValue()
			}
		}
		out[k] += int64(m.GetCounter().GetValue())
	}
	return out, nil
}

// Sub is r minus before: the requests answered between two readings.
func (r RequestCounts) Sub(before RequestCounts) RequestCounts {
	out := RequestCounts{}
	for k, v := range r {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// Of keeps the requests of one resource (its subresources included).
func (r RequestCounts) Of(resource string) RequestCounts {
	out := RequestCounts{}
	for k, v := range r {
		if k.Resource == resource {
			out[k] = v
		}
	}
	return out
}

// Succeeded counts the requests of a verb answered with a 2xx code.
func (r RequestCounts) Succeeded(verb string) int64 {
	var n int64
	for k, v := range r {
		if k.Verb == verb && strings.HasPrefix(k.Code, "2") {
			n += v
		}
	}
	return n
}

// Failed counts the requests answered with any other code than 2xx, by
// code ("429", "504", ...).
func (r RequestCounts) Failed() map[string]int64 {
	out := map[string]int64{}
	for k, v := range r {
		if !strings.HasPrefix(k.Code, "2") {
			out[k.Code] += v
		}
	}
	return out
}

// ServerErrors counts the requests answered with a 5xx code.
func (r RequestCounts) ServerErrors() int64 {
	var n int64
	for code, v := range r.Failed() {
		if strings.HasPrefix(code, "5") {
			n += v
		}
	}
	return n
}

// ServiceAccount creates a service account bound to the cluster-admin
// ClusterRole and returns a kubeconfig file (in the cluster's directory)
// and a client configuration with a token of it. Unlike the admin, whose
// group system:masters is exempt from the apiserver's in-flight limits and
// from API Priority and Fairness, a service account is subject to them, as
// an operator in a real cluster is: a test of how clients bear an
// overloaded apiserver (--max-requests-inflight) must run them as one.
func (c *Cluster) ServiceAccount(ctx context.Context, namespace, name string) (string, *rest.Config, error) {
	k, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return "", nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := k.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", nil, err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := k.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", nil, err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: namespace + "-" + name + "-cluster-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
	}
	if _, err := k.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", nil, err
	}
	day := int64(24 * 60 * 60) // longer than any run
	tr, err := k.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &day}}, metav1.CreateOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("requesting a token of %s/%s: %w", namespace, name, err)
	}
	data, err := renderKubeconfig(c.APIServerURL, tr.Status.Token, c.caData)
	if err != nil {
		return "", nil, err
	}
	path := filepath.Join(c.Dir, "kubeconfig-"+namespace+"-"+name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", nil, err
	}
	cfg := restConfig(c.APIServerURL, tr.Status.Token, c.caData)
	// RBAC's authorizer learns of the binding from its informer: wait until
	// the account may do what it is bound to.
	sk, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", nil, err
	}
	var last error
	for range 100 {
		if _, last = sk.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{}); last == nil {
			return path, cfg, nil
		}
		if !apierrors.IsForbidden(last) {
			break
		}
		select {
		case <-ctx.Done():
			return "", nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return "", nil, errors.Join(fmt.Errorf("the service account %s/%s cannot read its namespace", namespace, name), last)
}
