//go:build e2e

package e2e

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kopfgo/kopfgo/e2e/cluster"
)

// warnings records the API server's warnings, as kubectl prints them.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(code int, agent, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.seen, "\n")
}

// Example 17 as a user sees it with kubectl: the operator's webhooks,
// configured by itself under auto.kopf.dev, reject a wrong field (code 500)
// and a not-allowed one (code 555), warn, validate the status subresource,
// inject spec.injected into labelled objects; at exit, the configurations
// are left without webhooks.
func TestExample17Admission(t *testing.T) {
	ns := namespace(t)
	t.Cleanup(func() {
		for _, gvr := range []schema.GroupVersionResource{validatingGVR, mutatingGVR} {
			_ = dyn(t).Resource(gvr).Delete(context.Background(), "auto.kopf.dev", metav1.DeleteOptions{})
		}
	})
	op := runOperator(t, "./examples/17-admission", ns)
	waitLog(t, op, "Reconfiguring the mutating webhook auto.kopf.dev.", 1)

	warned := &warnings{}
	cfg := rest.CopyConfig(cluster.Shared(t).RESTConfig())
	cfg.WarningHandler = warned
	kexes := dynamic.NewForConfigOrDie(cfg).Resource(kexGVR).Namespace(ns)

	// The API server sees new configurations after a moment: a dry run of
	// a not-allowed field (rejected even in dry runs) tells when.
	probe := objYAML(t)
	probe["spec"].(map[string]any)["field"] = "not-allowed"
	eventually(t, waitShort, "the webhooks to be called", func() (bool, error) {
		_, err := kexes.Create(context.Background(), &unstructured.Unstructured{Object: probe}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil, nil
	})
	wrong := objYAML(t)
	wrong["metadata"].(map[string]any)["name"] = "wrong"
	wrong["spec"].(map[string]any)["field"] = "wrong"
	_, err := kexes.Create(context.Background(), &unstructured.Unstructured{Object: wrong}, metav1.CreateOptions{})
	checkDenied(t, err, "validate1.auto.kopf.dev", "Meh! I don't like it. Change the field.", 500)
	// Not on dry runs.
	if _, err := kexes.Create(context.Background(), &unstructured.Unstructured{Object: wrong}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("a dry run was rejected: %v", err)
	}

	obj, err := kexes.Create(context.Background(), &unstructured.Unstructured{Object: objYAML(t)}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedInt64(obj.Object, "spec", "injected"); v != 123 {
		t.Errorf("spec.injected = %v", obj.Object["spec"])
	}
	for _, w := range []string{"Accessing as user-agent: kube-apiserver-admission", "SSL peer is not identified.",
		"Also update status.field to match spec.field: 'value' != None"} {
		if !strings.Contains(warned.all(), w) {
			t.Errorf("no warning %q in:\n%s", w, warned.all())
		}
	}

	_, err = kexes.Patch(context.Background(), obj.GetName(), types.MergePatchType, []byte(`{"spec": {"field": "not-allowed"}}`), metav1.PatchOptions{})
	checkDenied(t, err, "validate2.spec.field.auto.kopf.dev", "I'm too lazy anyway. Go away!", 555)
	_, err = kexes.Patch(context.Background(), obj.GetName(), types.MergePatchType, []byte(`{"status": {"field": "other"}}`), metav1.PatchOptions{}, "status")
	checkDenied(t, err, "validate-subresources.auto.kopf.dev", "status.field MUST be equal to spec.field!", 500)
	if _, err := kexes.Patch(context.Background(), obj.GetName(), types.MergePatchType, []byte(`{"status": {"field": "value"}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Errorf("a matching status was rejected: %v", err)
	}
	if err := kexes.Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := op.Stop(waitLong); err != nil || op.ExitCode() != 0 {
		t.Errorf("the operator exited with code %d (%v)", op.ExitCode(), err)
	}
	for _, gvr := range []schema.GroupVersionResource{validatingGVR, mutatingGVR} {
		if hooks := webhooksOf(t, gvr, "auto.kopf.dev"); len(hooks) != 0 {
			t.Errorf("%s left: %s", gvr.Resource, hookNames(hooks))
		}
	}
}

// checkDenied checks a rejection as kubectl shows it: "admission webhook
// NAME denied the request: MESSAGE", with the code.
func checkDenied(t *testing.T, err error, webhook, msg string, code int32) {
	t.Helper()
	var st apierrors.APIStatus
	want := `admission webhook "` + webhook + `" denied the request: ` + msg
	if !errors.As(err, &st) || err.Error() != want || st.Status().Code != code {
		t.Errorf("error = %v (code %v), want %q (code %d)", err, codeOf(st), want, code)
	}
}

func codeOf(st apierrors.APIStatus) any {
	if st == nil {
		return nil
	}
	return st.Status().Code
}

// Example 17 as a service account with only the roles `kopfgo rbac`
// generates for it: the webhook configurations are created and patched
// (and emptied at exit) without a 403, and the webhooks are called.
func TestExample17UnderGeneratedRBAC(t *testing.T) {
	ns := namespace(t)
	t.Cleanup(func() {
		for _, gvr := range []schema.GroupVersionResource{validatingGVR, mutatingGVR} {
			_ = dyn(t).Resource(gvr).Delete(context.Background(), "auto.kopf.dev", metav1.DeleteOptions{})
		}
	})
	const pkg = "./examples/17-admission"
	manifest := kopfgoRBAC(t, pkg, "-n", ns, "--service-account-namespace", ns)
	for _, want := range []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"} {
		if !strings.Contains(manifest, want) {
			t.Errorf("kopfgo rbac grants nothing on %s:\n%s", want, manifest)
		}
	}
	bin := filepath.Join(t.TempDir(), "operator")
	build := exec.Command(kopfgoCLI(t), "build", pkg, "-o", bin)
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("kopfgo build: %v\n%s", err, out)
	}
	kubeconfig, k := serviceAccountKubeconfig(t, ns, "op-admission")
	applyRBAC(t, rename(t, docs(t, manifest), "kopfgo-e2e-admission-"+ns, "op-admission"))
	for _, res := range []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"} {
		waitAllowed(t, k, "", "admissionregistration.k8s.io", "patch", res)
	}
	p := startBinary(t, bin, nil, "-n", ns, "--kubeconfig", kubeconfig)
	waitLog(t, p, "Reconfiguring the mutating webhook auto.kopf.dev.", 1)
	probe := objYAML(t)
	probe["spec"].(map[string]any)["field"] = "not-allowed"
	var err error
	eventually(t, waitShort, "the webhooks to be called", func() (bool, error) {
		_, err = dyn(t).Resource(kexGVR).Namespace(ns).Create(context.Background(), &unstructured.Unstructured{Object: probe}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil, nil
	})
	checkDenied(t, err, "validate2.spec.field.auto.kopf.dev", "I'm too lazy anyway. Go away!", 555)
	if err := p.Stop(waitLong); err != nil || p.ExitCode() != 0 {
		t.Errorf("the operator exited with code %d (%v)", p.ExitCode(), err)
	}
	waitLog(t, p, "Cleaning up the admission webhook auto.kopf.dev.", 2)
	for _, l := range p.Lines() {
		if strings.Contains(strings.ToLower(l), "forbidden") {
			t.Errorf("a 403 with the generated role: %s", l)
		}
	}
	if hooks := webhooksOf(t, validatingGVR, "auto.kopf.dev"); len(hooks) != 0 {
		t.Errorf("left: %s", hookNames(hooks))
	}
}
