//go:build e2e

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/cluster"
)

var (
	validatingGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	mutatingGVR   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
)

// admissionCRD applies a CRD of the test's own, so that the webhooks (which
// are cluster-wide, as Kopf's are) touch no other test's objects.
func admissionCRD(t *testing.T) (schema.GroupVersionResource, string) {
	t.Helper()
	group := fmt.Sprintf("adm%d.e2e.kopfgo.dev", time.Now().UnixNano()%1e9)
	if err := cluster.Shared(t).Apply(context.Background(), []byte(crdYAML(group, "Gate", "gates"))); err != nil {
		t.Fatal(err)
	}
	return schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gates"}, "gates." + group
}

// gateObj is an object of the test's CRD.
func gateObj(gvr schema.GroupVersionResource, name string, spec, labels map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.Group + "/v1", "kind": "Gate",
		"metadata": map[string]any{"name": name, "labels": labels}, "spec": spec,
	}}
}

// managedConfigs is a name for a test's managed webhook configurations,
// unique to the run (the prefix tells the tests apart in the cluster), and
// removes the configurations of that name at the end of the test:
// persistent webhooks stay after the operator's exit, by design.
func managedConfigs(t *testing.T, prefix string) string {
	name := fmt.Sprintf("%s%d.auto.kopf.dev", prefix, time.Now().UnixNano()%1e9)
	t.Cleanup(func() {
		for _, gvr := range []schema.GroupVersionResource{validatingGVR, mutatingGVR} {
			_ = dyn(t).Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	return name
}

func webhooksOf(t *testing.T, gvr schema.GroupVersionResource, name string) []map[string]any {
	t.Helper()
	u, err := dyn(t).Resource(gvr).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	list, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
	var out []map[string]any
	for _, w := range list {
		out = append(out, w.(map[string]any))
	}
	return out
}

func hookNames(hooks []map[string]any) string {
	var names []string
	for _, h := range hooks {
		names = append(names, h["name"].(string))
	}
	return strings.Join(names, ",")
}

// The API server calls the operator's webhooks over TLS, through the
// configurations the operator manages: a validating handler rejects with
// its message and code as kubectl shows them and accepts valid objects;
// dry runs reach it with DryRun and store nothing; a mutating handler's
// changes (a label, a default, a removed field, a list element) are stored,
// sent as a minimal JSON patch; at a clean exit only the persistent
// webhook stays (compat: admission-handlers, admission-managed, admission-servers).
func TestAdmissionValidateMutateManaged(t *testing.T) {
	gvr, resource := admissionCRD(t)
	ns := namespace(t)
	managed := managedConfigs(t, "m")
	var sawDry atomic.Bool
	opts := kopfgo.Options{Namespaces: []string{ns}}
	opts.Settings.Admission = kopfgo.AdmissionSettings{Server: &kopfgo.WebhookServer{Addr: "127.0.0.1"}, Managed: managed}
	log, stop := operatorWith(t, ns, opts, func(op *kopfgo.Operator) {
		op.On.Validate(resource, func(ctx context.Context, a *kopfgo.Admission) error {
			if a.DryRun {
				sawDry.Store(true)
			}
			if a.Spec["field"] == "wrong" {
				return &kopfgo.AdmissionError{Message: "Meh! I don't like it. Change the field.", Code: 555}
			}
			a.Warnings = append(a.Warnings, "checked by kopfgo")
			return nil
		}, kopfgo.ID("validate1"), kopfgo.Operations("CREATE", "UPDATE"), kopfgo.Persistent(true))
		op.On.Validate(resource, func(ctx context.Context, a *kopfgo.Admission) error {
			return errors.New("plain failure")
		}, kopfgo.ID("validate_plain"), kopfgo.Field("spec.plain"), kopfgo.Value(kopfgo.Present))
		op.On.Mutate(resource, func(ctx context.Context, a *kopfgo.Admission) error {
			a.Patch.Labels()["mutated"] = "yes"
			a.Patch.Spec()["injected"] = 123
			a.Patch.Spec()["obsolete"] = nil
			a.Patch.Fns = append(a.Patch.Fns, func(body map[string]any) error {
				if items, ok := body["spec"].(map[string]any)["items"].([]any); ok && len(items) > 1 {
					items[1] = "B"
				}
				return nil
			})
			return nil
		}, kopfgo.ID("mutate1"), kopfgo.Labels{"somelabel": "somevalue"})
	})

	// The configurations appear with one webhook per handler.
	var vhooks, mhooks []map[string]any
	eventually(t, waitLong, "managed webhook configurations", func() (bool, error) {
		vhooks, mhooks = webhooksOf(t, validatingGVR, managed), webhooksOf(t, mutatingGVR, managed)
		return len(vhooks) == 2 && len(mhooks) == 1, nil
	})
	if got := hookNames(vhooks); got != "validate1."+managed+",validate-plain.spec.plain."+managed {
		t.Errorf("validating webhooks = %s", got)
	}
	v1 := vhooks[0]
	rules, _ := json.Marshal(v1["rules"])
	if want := fmt.Sprintf(`[{"apiGroups":["%s"],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["gates"],"scope":"*"}]`, gvr.Group); string(rules) != want {
		t.Errorf("rules = %s, want %s", rules, want)
	}
	if v1["failurePolicy"] != "Fail" || v1["sideEffects"] != "None" {
		t.Errorf("webhook = %v", v1)
	}
	sel, _ := json.Marshal(mhooks[0]["objectSelector"])
	if string(sel) != `{"matchExpressions":[{"key":"somelabel","operator":"In","values":["somevalue"]}]}` {
		t.Errorf("objectSelector = %s", sel)
	}
	client := v1["clientConfig"].(map[string]any)
	url := client["url"].(string)
	if !strings.HasPrefix(url, "https://127.0.0.1:") || !strings.HasSuffix(url, "/validate1") {
		t.Errorf("url = %s", url)
	}

	// The API server needs a moment to see new configurations; a rejected
	// object is the sign.
	gates := dyn(t).Resource(gvr).Namespace(ns)
	gate := func(name string, spec, labels map[string]any) *unstructured.Unstructured {
		return gateObj(gvr, name, spec, labels)
	}
	var rejected error
	eventually(t, waitShort, "the webhook to be called", func() (bool, error) {
		_, rejected = gates.Create(context.Background(), gate("wrong", map[string]any{"field": "wrong"}, nil), metav1.CreateOptions{})
		return rejected != nil, nil
	})
	var st apierrors.APIStatus
	if !errors.As(rejected, &st) || st.Status().Code != 555 ||
		rejected.Error() != `admission webhook "validate1.`+managed+`" denied the request: Meh! I don't like it. Change the field.` {
		t.Errorf("rejection = %v", rejected)
	}
	_, err := gates.Create(context.Background(), gate("plain", map[string]any{"plain": 1}, nil), metav1.CreateOptions{})
	if !errors.As(err, &st) || st.Status().Code != 500 || !strings.Contains(err.Error(), "denied the request: plain failure") {
		t.Errorf("plain error = %v", err)
	}
	if _, err := gates.Create(context.Background(), gate("fine", map[string]any{"field": "fine"}, nil), metav1.CreateOptions{}); err != nil {
		t.Errorf("a valid object is rejected: %v", err)
	}

	// Dry run: the handler sees DryRun, nothing is stored.
	if _, err := gates.Create(context.Background(), gate("dry", map[string]any{"field": "fine"}, nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("dry run: %v", err)
	}
	if !sawDry.Load() {
		t.Error("the handler did not see DryRun")
	}
	if _, err := gates.Get(context.Background(), "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the dry-run object exists: %v", err)
	}

	// Mutation: stored as mutated.
	stored, err := gates.Create(context.Background(), gate("mutant",
		map[string]any{"field": "fine", "obsolete": true, "items": []any{"a", "b", "c"}},
		map[string]any{"somelabel": "somevalue"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec, _, _ := unstructured.NestedMap(stored.Object, "spec")
	if stored.GetLabels()["mutated"] != "yes" || spec["injected"] != int64(123) || spec["obsolete"] != nil ||
		fmt.Sprint(spec["items"]) != "[a B c]" {
		t.Errorf("stored = %v", stored.Object)
	}
	unlabelled, err := gates.Create(context.Background(), gate("unlabelled", map[string]any{"field": "fine"}, nil), metav1.CreateOptions{})
	if err != nil || unlabelled.GetLabels()["mutated"] != "" {
		t.Errorf("an object outside the objectSelector was mutated: %v, %v", unlabelled, err)
	}

	// The patch the API server got: ask the webhook as it does, over TLS
	// with the configuration's CA bundle.
	ca, _ := base64.StdEncoding.DecodeString(mhooks[0]["clientConfig"].(map[string]any)["caBundle"].(string))
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("the caBundle holds no certificate")
	}
	https := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: waitShort}
	murl := mhooks[0]["clientConfig"].(map[string]any)["url"].(string)
	review := fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x1","operation":"CREATE",
		"resource":{"group":%q,"version":"v1","resource":"gates"},"userInfo":{"username":"me"},
		"object":{"apiVersion":"%s/v1","kind":"Gate","metadata":{"name":"m","labels":{"somelabel":"somevalue"}},
		"spec":{"obsolete":1,"items":["a","b","c"],"keep":{"deep":[1,2,3]}}}}}`, gvr.Group, gvr.Group)
	resp, err := https.Post(murl, "application/json", strings.NewReader(review))
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Response struct {
			Allowed   bool   `json:"allowed"`
			Patch     []byte `json:"patch"`
			PatchType string `json:"patchType"`
		} `json:"response"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	want := `[{"op":"add","path":"/metadata/labels/mutated","value":"yes"},{"op":"remove","path":"/spec/obsolete"},` +
		`{"op":"add","path":"/spec/injected","value":123},{"op":"replace","path":"/spec/items/1","value":"B"}]`
	if !answer.Response.Allowed || answer.Response.PatchType != "JSONPatch" || !sameOps(t, answer.Response.Patch, want) {
		t.Errorf("answer = %+v, patch %s", answer.Response, answer.Response.Patch)
	}

	// Bad input: a malformed review is a 400 with a message; plain HTTP is
	// refused.
	resp, err = https.Post(murl, "application/json", strings.NewReader(`{"request": [`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), "malformed AdmissionReview") {
		t.Errorf("malformed review: %d %s", resp.StatusCode, body)
	}
	resp, err = http.Post(strings.Replace(murl, "https://", "http://", 1), "application/json", strings.NewReader(review))
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || strings.Contains(string(body), "allowed") {
			t.Errorf("plain HTTP was served: %d %s", resp.StatusCode, body)
		}
	}

	// A clean exit leaves the persistent webhook only.
	stop()
	if got := hookNames(webhooksOf(t, validatingGVR, managed)); got != "validate1."+managed {
		t.Errorf("after exit, validating webhooks = %q", got)
	}
	if got := webhooksOf(t, mutatingGVR, managed); len(got) != 0 {
		t.Errorf("after exit, mutating webhooks = %v", hookNames(got))
	}
	if log.Count("Cleaning up the admission webhook "+managed+".") != 2 {
		t.Errorf("not two clean-up lines (one per configuration)")
	}
}

// sameOps compares JSON patches as sets of operations (jsondiff orders
// them by its walk).
func sameOps(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w []any
	if json.Unmarshal(got, &g) != nil || json.Unmarshal([]byte(want), &w) != nil || len(g) != len(w) {
		return false
	}
	seen := map[string]bool{}
	for _, op := range g {
		b, _ := json.Marshal(op)
		seen[string(b)] = true
	}
	for _, op := range w {
		b, _ := json.Marshal(op)
		if !seen[string(b)] {
			return false
		}
	}
	return true
}

// A handler's panic rejects the request with its message; with
// IgnoreFailures the call fails instead and the API server admits the
// request (failurePolicy Ignore); the operator goes on serving.
func TestAdmissionPanics(t *testing.T) {
	gvr, resource := admissionCRD(t)
	ns := namespace(t)
	managed := managedConfigs(t, "p")
	opts := kopfgo.Options{Namespaces: []string{ns}}
	opts.Settings.Admission = kopfgo.AdmissionSettings{Server: &kopfgo.WebhookServer{Addr: "127.0.0.1"}, Managed: managed}
	operatorWith(t, ns, opts, func(op *kopfgo.Operator) {
		op.On.Validate(resource, func(ctx context.Context, a *kopfgo.Admission) error {
			panic("strict handler broke")
		}, kopfgo.ID("strict"), kopfgo.Labels{"mode": "strict"})
		op.On.Validate(resource, func(ctx context.Context, a *kopfgo.Admission) error {
			panic("lenient handler broke")
		}, kopfgo.ID("lenient"), kopfgo.Labels{"mode": "lenient"}, kopfgo.IgnoreFailures(true))
	})
	eventually(t, waitLong, "managed webhook configurations", func() (bool, error) {
		return len(webhooksOf(t, validatingGVR, managed)) == 2, nil
	})
	gates := dyn(t).Resource(gvr).Namespace(ns)
	obj := func(name, mode string) *unstructured.Unstructured {
		return gateObj(gvr, name, nil, map[string]any{"mode": mode})
	}
	var err error
	eventually(t, waitShort, "the webhook to be called", func() (bool, error) {
		_, err = gates.Create(context.Background(), obj("strict", "strict"), metav1.CreateOptions{})
		return err != nil, nil
	})
	if !strings.Contains(err.Error(), "panic: strict handler broke") {
		t.Errorf("strict panic: %v", err)
	}
	if _, err := gates.Create(context.Background(), obj("lenient", "lenient"), metav1.CreateOptions{}); err != nil {
		t.Errorf("lenient panic was not ignored: %v", err)
	}
	if _, err := gates.Create(context.Background(), obj("strict2", "strict"), metav1.CreateOptions{}); err == nil {
		t.Errorf("the server stopped rejecting after panics")
	}
}

// writeCert writes a self-signed certificate for 127.0.0.1 and its key,
// the certificate being its own CA bundle.
func writeCert(t *testing.T, certFile, keyFile string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	// The key first: the server reads the pair when the certificate changes.
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return certPEM
}

func caBundles(t *testing.T, name string) []string {
	var out []string
	for _, h := range webhooksOf(t, validatingGVR, name) {
		out = append(out, h["clientConfig"].(map[string]any)["caBundle"].(string))
	}
	return out
}

// The managed configurations follow the certificate files (renewed while
// the operator runs: the new CA bundle is patched in and the API server's
// calls go on) and the handlers (another operator version under the same
// name replaces the webhooks).
func TestAdmissionManagedConfigsFollowCertificatesAndHandlers(t *testing.T) {
	gvr, resource := admissionCRD(t)
	ns := namespace(t)
	managed := managedConfigs(t, "c")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	first := base64.StdEncoding.EncodeToString(writeCert(t, certFile, keyFile))
	opts := kopfgo.Options{Namespaces: []string{ns}}
	opts.Settings.Admission = kopfgo.AdmissionSettings{Managed: managed, Server: &kopfgo.WebhookServer{
		Addr: "127.0.0.1", CertFile: certFile, KeyFile: keyFile, FileCheckInterval: 100 * time.Millisecond,
	}}
	reject := func(ctx context.Context, a *kopfgo.Admission) error {
		if a.Spec["field"] == "wrong" {
			return &kopfgo.AdmissionError{Message: "no"}
		}
		return nil
	}
	_, stop := operatorWith(t, ns, opts, func(op *kopfgo.Operator) {
		op.On.Validate(resource, reject, kopfgo.ID("check_a"))
		op.On.Validate(resource, reject, kopfgo.ID("check_b"))
	})
	eventually(t, waitLong, "the first CA bundle", func() (bool, error) {
		b := caBundles(t, managed)
		return len(b) == 2 && b[0] == first && b[1] == first, nil
	})
	gates := dyn(t).Resource(gvr).Namespace(ns)
	wrong := func(name string) error {
		_, err := gates.Create(context.Background(), gateObj(gvr, name, map[string]any{"field": "wrong"}, nil), metav1.CreateOptions{})
		return err
	}
	eventually(t, waitShort, "a rejection", func() (bool, error) { return wrong("w1") != nil, nil })

	second := base64.StdEncoding.EncodeToString(writeCert(t, certFile, keyFile))
	eventually(t, waitShort, "the renewed CA bundle", func() (bool, error) {
		b := caBundles(t, managed)
		return len(b) == 2 && b[0] == second, nil
	})
	// Rejected through the new certificate (code 0 answers 500).
	var err error
	eventually(t, waitShort, "a rejection with the renewed certificate", func() (bool, error) {
		err = wrong("w2")
		return err != nil && strings.Contains(err.Error(), "denied the request: no"), nil
	})
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Code != 500 {
		t.Errorf("rejection = %v", err)
	}
	stop()

	_, stop2 := operatorWith(t, ns, opts, func(op *kopfgo.Operator) {
		op.On.Validate(resource, reject, kopfgo.ID("check_c"))
	})
	eventually(t, waitLong, "the webhooks of the new handlers", func() (bool, error) {
		return hookNames(webhooksOf(t, validatingGVR, managed)) == "check-c."+managed, nil
	})
	stop2()
	if got := webhooksOf(t, validatingGVR, managed); len(got) != 0 {
		t.Errorf("after exit: %s", hookNames(got))
	}
}

// A handler whose CRD appears after the start gets its webhook's rules then,
// and the API server calls it (compat: admission-managed).
func TestAdmissionResourceAppearingLater(t *testing.T) {
	ns := namespace(t)
	group := fmt.Sprintf("late%d.e2e.kopfgo.dev", time.Now().UnixNano()%1e9)
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gates"}
	managed := managedConfigs(t, "l")
	opts := kopfgo.Options{}
	opts.Settings.Admission = kopfgo.AdmissionSettings{Server: &kopfgo.WebhookServer{Addr: "127.0.0.1"}, Managed: managed}
	log, _ := operatorWith(t, ns, opts, func(op *kopfgo.Operator) {
		op.On.Validate("gates."+group, func(ctx context.Context, a *kopfgo.Admission) error {
			return &kopfgo.AdmissionError{Message: "late but here", Code: 409}
		}, kopfgo.ID("late"))
	})
	log.WaitFor(t, "Reconfiguring the validating webhook "+managed+".", 1)
	if hooks := webhooksOf(t, validatingGVR, managed); len(hooks) != 1 || rulesOf(hooks[0]) != 0 {
		t.Fatalf("before the CRD: %v", hooks)
	}
	if err := cluster.Shared(t).Apply(context.Background(), []byte(crdYAML(group, "Gate", "gates"))); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLong, "the webhook's rules for the new resource", func() (bool, error) {
		hooks := webhooksOf(t, validatingGVR, managed)
		return len(hooks) == 1 && rulesOf(hooks[0]) == 1, nil
	})
	var err error
	eventually(t, waitShort, "the webhook to be called", func() (bool, error) {
		_, err = dyn(t).Resource(gvr).Namespace(ns).Create(context.Background(), gateObj(gvr, "g", nil, nil), metav1.CreateOptions{})
		if err == nil {
			_ = dyn(t).Resource(gvr).Namespace(ns).Delete(context.Background(), "g", metav1.DeleteOptions{})
		}
		return err != nil, nil
	})
	if !strings.Contains(err.Error(), "late but here") {
		t.Errorf("error = %v", err)
	}
}

// rulesOf counts a webhook's rules (none stored: the field is absent).
func rulesOf(hook map[string]any) int {
	rules, _ := hook["rules"].([]any)
	return len(rules)
}
