package manifests

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kopfgo/kopfgo/internal/rbac"
	"github.com/kopfgo/kopfgo/internal/resources"
)

func kinds(objs []Object) []string {
	var out []string
	for _, o := range objs {
		m, err := tidy(o.Object)
		if err != nil {
			panic(err)
		}
		out = append(out, m["kind"].(string))
	}
	return out
}

func use() []rbac.Use {
	return []rbac.Use{{Resource: resources.Resource{Group: "kopf.dev", Version: "v1", Plural: "kopfexamples", Namespaced: true}, Handles: true}}
}

func TestObjectsStandalone(t *testing.T) {
	objs, err := Objects(Spec{Name: "op", Image: "reg/op:v1", RBAC: rbac.Spec{Uses: use(), Events: true}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service"}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Errorf("kinds %q, want %q", got, want)
	}
	d := objs[4].Object.(*appsv1.Deployment)
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	if c.Image != "reg/op:v1" || !slices.Contains(c.Args, "--standalone") || !slices.Contains(c.Args, "--all-namespaces") {
		t.Errorf("image %q args %q", c.Image, c.Args)
	}
	sc := c.SecurityContext
	if !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext %+v", sc)
	}
	if !*pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.SeccompProfile.Type != "RuntimeDefault" || pod.ServiceAccountName != "op" {
		t.Errorf("pod %+v", pod.SecurityContext)
	}
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.Resources.Limits.Memory().String() != "256Mi" {
		t.Errorf("probes or resources: %+v", c)
	}
	data, err := Marshal("header", objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"status:", "creationTimestamp", "spec: {}"} {
		if strings.Contains(string(data), bad) {
			t.Errorf("the stream has %q", bad)
		}
	}
}

func TestObjectsReplicasWebhooksMonitor(t *testing.T) {
	if _, err := Objects(Spec{Image: "x", Replicas: 2}); err == nil || !strings.Contains(err.Error(), "--leader-elect") {
		t.Errorf("2 replicas without leader election: %v", err)
	}
	if _, err := Objects(Spec{}); err == nil || !strings.Contains(err.Error(), "--image") {
		t.Errorf("no image: %v", err)
	}
	objs, err := Objects(Spec{Name: "op", Namespace: "ops", Image: "x", Replicas: 3, LeaderElection: true,
		Webhooks: true, ServiceMonitor: true, Served: []string{"a", "b"}, RBAC: rbac.Spec{Uses: use()}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Role", "RoleBinding",
		"Deployment", "PodDisruptionBudget", "Service", "Service", "ServiceMonitor"}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Errorf("kinds %q, want %q", got, want)
	}
	if certs := objs[6].Object.(*rbacv1.Role); certs.Name != "op-webhook-certs" || certs.Namespace != "ops" ||
		len(certs.Rules) != 1 || !slices.Equal(certs.Rules[0].Resources, []string{"secrets"}) || !slices.Equal(certs.Rules[0].Verbs, []string{"get", "create", "update"}) {
		t.Errorf("the certificates' Role: %+v", certs)
	}
	args := objs[8].Object.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Args
	for _, a := range []string{"--leader-elect", "--leader-elect-namespace=ops", "--namespace=a", "--namespace=b",
		"--webhook-service=op-webhooks", "--webhook-secret=op-webhooks-certs"} {
		if !slices.Contains(args, a) {
			t.Errorf("args %q lack %s", args, a)
		}
	}
}

func TestObjectsPeeringSplit(t *testing.T) {
	objs, err := Objects(Spec{Name: "op", Image: "x", Peering: true, RBAC: rbac.Spec{Uses: use()}})
	if err != nil {
		t.Fatal(err)
	}
	got := kinds(objs)
	if got[0] != "CustomResourceDefinition" || got[1] != "CustomResourceDefinition" || got[len(got)-1] != "KopfPeering" || got[len(got)-2] != "ClusterKopfPeering" {
		t.Errorf("kinds %q: the CRDs first, the peering objects last", got)
	}
	dir := t.TempDir()
	commands, err := WriteDir(dir, "h", objs)
	if err != nil {
		t.Fatal(err)
	}
	if len(commands) != 4 || !strings.HasSuffix(commands[0], "/crds") || !strings.Contains(commands[1], "kubectl wait") ||
		!strings.HasSuffix(commands[2], "/peering") || commands[3] != "kubectl apply -k "+dir {
		t.Errorf("commands %q", commands)
	}
	k, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil || strings.Contains(string(k), "crds") || strings.Contains(string(k), "peering") || !strings.Contains(string(k), "deployment.yaml") {
		t.Errorf("the base's kustomization: %s %v", k, err)
	}
}
