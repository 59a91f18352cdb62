//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/kopfgo/kopfgo/e2e/cluster"
)

// kopfgoRBAC runs `kopfgo rbac PKG ARGS...` against the shared cluster.
func kopfgoRBAC(t *testing.T, pkg string, args ...string) string {
	t.Helper()
	// The e2e operators run with --standalone: no peering rules.
	return kopfgoIn(t, append(append([]string{"rbac", pkg}, args...), "--standalone", "--kubeconfig", cluster.Shared(t).Kubeconfig)...)
}

// docs splits a YAML stream into objects.
func docs(t *testing.T, manifest string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, d := range strings.Split(manifest, "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("%v in:\n%s", err, d)
		}
		if len(m) > 0 {
			out = append(out, m)
		}
	}
	return out
}

// serviceAccountKubeconfig creates a service account and returns a
// kubeconfig with a token for it: the operator's identity in a pod.
func serviceAccountKubeconfig(t *testing.T, ns, sa string) (string, kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	k := kube(t)
	if _, err := k.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return tokenKubeconfig(t, ns, sa)
}

// tokenKubeconfig returns a kubeconfig with a token of an existing service
// account (the TokenRequest API, as the kubelet gets a pod's).
func tokenKubeconfig(t *testing.T, ns, sa string) (string, kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	k := kube(t)
	tr, err := k.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := cluster.Shared(t)
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: %q, certificate-authority-data: %q}
users:
- name: %s
  user: {token: %q}
contexts:
- name: sa
  context: {cluster: e2e, user: %s, namespace: %s}
current-context: sa
`, c.APIServerURL, base64.StdEncoding.EncodeToString(c.RESTConfig().CAData), sa, tr.Status.Token, sa, ns)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return path, kubernetes.NewForConfigOrDie(cfg)
}

// waitAllowed waits until the authorizer has seen the bindings: the service
// account may do verb on resource (RBAC's caches lag behind writes).
func waitAllowed(t *testing.T, k kubernetes.Interface, ns, group, verb, resource string) {
	t.Helper()
	sub := ""
	resource, sub, _ = strings.Cut(resource, "/")
	eventually(t, waitShort, fmt.Sprintf("RBAC to allow %s %s", verb, resource), func() (bool, error) {
		r, err := k.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), &authzv1.SelfSubjectAccessReview{
			Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
				Namespace: ns, Group: group, Verb: verb, Resource: resource, Subresource: sub}},
		}, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, err
	})
}

// applyRBAC applies the manifest with its names suffixed (each variant
// gets roles of its own: no waiting for an update to reach the caches).
func applyRBAC(t *testing.T, objs []map[string]any) {
	t.Helper()
	var b strings.Builder
	for _, o := range objs {
		data, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	if err := cluster.Shared(t).Apply(context.Background(), []byte(b.String())); err != nil {
		t.Fatalf("applying:\n%s\n%v", b.String(), err)
	}
}

// rename gives the roles and bindings a name and binds them to sa.
func rename(t *testing.T, objs []map[string]any, name, sa string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, o := range objs {
		data, _ := yaml.Marshal(o)
		var c map[string]any
		_ = yaml.Unmarshal(data, &c)
		c["metadata"].(map[string]any)["name"] = name
		if ref, ok := c["roleRef"].(map[string]any); ok {
			ref["name"] = name
			c["subjects"].([]any)[0].(map[string]any)["name"] = sa
		}
		out = append(out, c)
	}
	return out
}

// TestRBACLeastPrivilege runs an operator with every kind of handler under
// exactly the role `kopfgo rbac` generates, through create, update, field,
// delete, daemons, timers, events and indices with no 403; then, rule by
// rule and verb by verb, without one permission, and sees the 403 that names
// it in the operator's log.
func TestRBACLeastPrivilege(t *testing.T) {
	ns := namespace(t)
	const pkg = "./e2e/operators/rbacfull"
	manifest := kopfgoRBAC(t, pkg, "-n", ns, "--namespaced", "--service-account-namespace", ns)
	t.Logf("kopfgo rbac:\n%s", manifest)
	objs := docs(t, manifest)
	bin := filepath.Join(t.TempDir(), "operator")
	build := exec.Command(kopfgoCLI(t), "build", pkg, "-o", bin)
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("kopfgo build: %v\n%s", err, out)
	}

	// The permissions, as (rule index of its role document, verb).
	type perm struct {
		doc, rule       int
		group, resource string
		verb            string
	}
	var perms []perm
	for i, o := range objs {
		rules, _ := o["rules"].([]any)
		for j, r := range rules {
			r := r.(map[string]any)
			for _, v := range r["verbs"].([]any) {
				perms = append(perms, perm{i, j, r["apiGroups"].([]any)[0].(string), r["resources"].([]any)[0].(string), v.(string)})
			}
		}
	}
	for _, want := range []string{"list kopfexamples", "watch kopfexamples", "patch kopfexamples", "get kopfexamples",
		"patch kopfexamples/status", "create events", "list customresourcedefinitions", "watch customresourcedefinitions"} {
		if !slices.ContainsFunc(perms, func(p perm) bool { return p.verb+" "+p.resource == want }) {
			t.Errorf("the role does not grant %s", want)
		}
	}
	if len(perms) != 8 {
		t.Errorf("the role grants %d permissions, want the 8 above: %+v", len(perms), perms)
	}

	t.Run("exactly", func(t *testing.T) {
		kubeconfig, k := serviceAccountKubeconfig(t, ns, "op-full")
		applyRBAC(t, rename(t, objs, "kopfgo-e2e-"+ns, "op-full"))
		for _, p := range perms {
			waitAllowed(t, k, ns, p.group, p.verb, p.resource)
		}
		p := startBinary(t, bin, nil, "-n", ns, "--kubeconfig", kubeconfig)
		obj := objYAML(t)
		createKex(t, ns, obj)
		for _, line := range []string{"CREATE CALLED", "DAEMON STARTED", "TIMER TICKED", "EVENT CALLED"} {
			waitLog(t, p, line, 1)
		}
		// The creation's cycle must be over (its diff-base written), or the
		// change below is absorbed by it and no update runs.
		waitKex(t, ns, "kopf-example-1", "the creation handled and recorded", func(u *unstructured.Unstructured) bool {
			v, _, _ := unstructured.NestedBool(u.Object, "status", "create", "created")
			_, recorded := u.GetAnnotations()["kopf.zalando.org/last-handled-configuration"]
			return v && recorded
		})
		patchKex(t, ns, "kopf-example-1", `{"spec":{"field":"changed"}}`)
		waitLog(t, p, "UPDATE CALLED", 1)
		waitLog(t, p, "FIELD CALLED changed", 1)
		deleteKex(t, ns, "kopf-example-1")
		waitLog(t, p, "DELETE CALLED", 1)
		waitGone(t, ns, "kopf-example-1")
		eventually(t, waitShort, "the handler's Event", func() (bool, error) {
			evs, err := kube(t).CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool { return e.Reason == "Created" }), nil
		})
		for _, l := range p.Lines() {
			if strings.Contains(strings.ToLower(l), "forbidden") {
				t.Errorf("a 403 with the generated role: %s", l)
			}
		}
	})

	for n, without := range perms {
		if without.verb == "get" {
			// Only re-reads use it, when the watch lags behind the
			// operator's own patches: not something a test can cause.
			continue
		}
		t.Run("without "+without.verb+" "+without.resource, func(t *testing.T) {
			sa := fmt.Sprintf("op-%d", n)
			kubeconfig, k := serviceAccountKubeconfig(t, ns, sa)
			variant := rename(t, objs, fmt.Sprintf("kopfgo-e2e-%s-%d", ns, n), sa)
			rule := variant[without.doc]["rules"].([]any)[without.rule].(map[string]any)
			rule["verbs"] = slices.DeleteFunc(rule["verbs"].([]any), func(v any) bool { return v == without.verb })
			if len(rule["verbs"].([]any)) == 0 { // RBAC wants none then
				rules := variant[without.doc]["rules"].([]any)
				variant[without.doc]["rules"] = slices.Delete(rules, without.rule, without.rule+1)
			}
			applyRBAC(t, variant)
			for _, p := range perms {
				if p != without {
					waitAllowed(t, k, ns, p.group, p.verb, p.resource)
				}
			}
			p := startBinary(t, bin, nil, "-n", ns, "--kubeconfig", kubeconfig)
			name := fmt.Sprintf("kex-%d", n)
			obj := objYAML(t)
			obj["metadata"].(map[string]any)["name"] = name
			createKex(t, ns, obj)
			// The API server's words, which kopfgo's report includes.
			want := fmt.Sprintf("cannot %s resource %q", without.verb, without.resource)
			t.Cleanup(func() {
				if t.Failed() {
					evs, err := kube(t).CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
					if err == nil {
						for _, e := range evs.Items {
							t.Logf("event %s %s %s by %s", e.InvolvedObject.Name, e.Reason, e.Message, e.ReportingController)
						}
					}
					for _, o := range variant {
						t.Logf("applied %s", mustJSON(t, o))
					}
				}
			})
			waitLog(t, p, want, 1)
			t.Logf("reported: %s", p.Lines()[slices.IndexFunc(p.Lines(), func(l string) bool { return strings.Contains(l, want) })])
			// Leave nothing for the next variant's operator to handle.
			patchKex(t, ns, name, `{"metadata":{"finalizers":null}}`)
			deleteKex(t, ns, name)
			waitGone(t, ns, name)
		})
	}
}
