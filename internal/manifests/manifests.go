package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/kopfgo/kopfgo/internal/rbac"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// The ports the Deployment gives the operator's endpoints.
const (
	HealthPort  = 8080
	MetricsPort = 9090
)

// Spec is the operator to deploy.
type Spec struct {
	// RBAC is the computed RBAC; its Name, ServiceAccount and
	// ServiceAccountNamespace are overwritten from Name and Namespace.
	RBAC rbac.Spec
	// Name of every object (and the app.kubernetes.io/name label);
	// Namespace is where the operator runs (default: Name).
	Name, Namespace string
	Image           string
	// Replicas > 1 needs LeaderElection or Shards (several peers of one
	// priority would stand each other off).
	Replicas int32
	// Served namespaces (the run's -n); none: the whole cluster.
	Served []string
	// The operator's way of running beside others: Peering (Kopf's, with
	// its CRDs), LeaderElection, Shards > 0; none of them: standalone.
	Peering        bool
	LeaderElection bool
	Shards         int
	// Webhooks: the operator serves admission webhooks on WebhookPort.
	Webhooks    bool
	WebhookPort int32
	// ServiceMonitor adds a Prometheus Operator ServiceMonitor.
	ServiceMonitor bool
}

// Object is one manifest and the file WriteDir puts it in.
type Object struct {
	File   string
	Object any
	Rules  []rbac.Rule // the reasons of an RBAC object's rules
}

// Files, in the order they are applied.
const (
	FileCRDs       = "crds/peering-crds.yaml"
	FileNamespace  = "namespace.yaml"
	FileRBAC       = "rbac.yaml"
	FileDeployment = "deployment.yaml"
	FileService    = "service.yaml"
	FileMonitoring = "servicemonitor.yaml"
	FilePeering    = "peering/peering.yaml"
)

func (s *Spec) defaults() error {
	if s.Name == "" {
		s.Name = "kopfgo-operator"
	}
	if s.Namespace == "" {
		s.Namespace = s.Name
	}
	if s.Image == "" {
		return errors.New("no image: give --image REF (what kopfgo build --image pushed)")
	}
	if s.Replicas == 0 {
		s.Replicas = 1
	}
	if s.Replicas > 1 && !s.LeaderElection && s.Shards == 0 {
		return fmt.Errorf("%d replicas need --leader-elect or --shards: peers of one priority would stand each other off", s.Replicas)
	}
	if s.Webhooks && s.WebhookPort == 0 {
		s.WebhookPort = 9443
	}
	s.RBAC.Name, s.RBAC.ServiceAccount, s.RBAC.ServiceAccountNamespace = s.Name, s.Name, s.Namespace
	s.RBAC.Peering = s.Peering && !s.LeaderElection && s.Shards == 0
	s.RBAC.Sharding = s.Shards > 0
	if s.LeaderElection || s.Shards > 0 {
		s.RBAC.LeaseNamespace = s.Namespace
	}
	if s.Webhooks {
		s.RBAC.WebhookSecretNamespace = s.Namespace
	}
	return nil
}

// Objects are the manifests of spec, in the order to apply them.
func Objects(spec Spec) ([]Object, error) {
	if err := spec.defaults(); err != nil {
		return nil, err
	}
	var out []Object
	add := func(file string, obj any) { out = append(out, Object{File: file, Object: obj}) }
	if spec.RBAC.Peering {
		for _, crd := range PeeringCRDs() {
			add(FileCRDs, crd)
		}
	}
	labels := map[string]string{"app.kubernetes.io/name": spec.Name, "app.kubernetes.io/managed-by": "kopfgo"}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: spec.Namespace, Labels: labels}
	}
	add(FileNamespace, &corev1.Namespace{TypeMeta: typeMeta("v1", "Namespace"), ObjectMeta: metav1.ObjectMeta{Name: spec.Namespace, Labels: labels}})
	add(FileRBAC, &corev1.ServiceAccount{TypeMeta: typeMeta("v1", "ServiceAccount"), ObjectMeta: meta(spec.Name)})
	roles, err := rbac.Objects(spec.RBAC)
	if err != nil {
		return nil, err
	}
	for _, r := range roles {
		out = append(out, Object{File: FileRBAC, Object: r.Object, Rules: r.Rules})
	}
	add(FileDeployment, deployment(spec, meta(spec.Name), labels))
	if spec.Replicas > 1 {
		one := intstr.FromInt32(1)
		add(FileDeployment, &policyv1.PodDisruptionBudget{TypeMeta: typeMeta("policy/v1", "PodDisruptionBudget"), ObjectMeta: meta(spec.Name),
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: selector(spec)}}})
	}
	metrics := meta(spec.Name + "-metrics")
	add(FileService, &corev1.Service{TypeMeta: typeMeta("v1", "Service"), ObjectMeta: metrics, Spec: corev1.ServiceSpec{
		Selector: selector(spec),
		Ports:    []corev1.ServicePort{{Name: "metrics", Port: MetricsPort, TargetPort: intstr.FromString("metrics")}},
	}})
	if spec.Webhooks {
		add(FileService, &corev1.Service{TypeMeta: typeMeta("v1", "Service"), ObjectMeta: meta(spec.Name + "-webhooks"), Spec: corev1.ServiceSpec{
			Selector: selector(spec),
			Ports:    []corev1.ServicePort{{Name: "webhooks", Port: 443, TargetPort: intstr.FromString("webhooks")}},
		}})
	}
	if spec.ServiceMonitor {
		add(FileMonitoring, map[string]any{
			"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
			"metadata": map[string]any{"name": spec.Name, "namespace": spec.Namespace, "labels": labels},
			"spec": map[string]any{
				"selector":  map[string]any{"matchLabels": metrics.Labels},
				"endpoints": []any{map[string]any{"port": "metrics", "path": "/metrics"}},
			},
		})
	}
	if spec.RBAC.Peering {
		for _, obj := range PeeringObjects(spec.Served) {
			add(FilePeering, obj)
		}
	}
	return out, nil
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func selector(spec Spec) map[string]string {
	return map[string]string{"app.kubernetes.io/name": spec.Name}
}

// Args are the operator's run flags in the Deployment.
func Args(spec Spec) []string {
	args := []string{"run"}
	if len(spec.Served) == 0 {
		args = append(args, "--all-namespaces")
	}
	for _, ns := range spec.Served {
		args = append(args, "--namespace="+ns)
	}
	switch {
	case spec.Shards > 0:
		args = append(args, "--shards="+strconv.Itoa(spec.Shards), "--shards-namespace="+spec.Namespace)
	case spec.LeaderElection:
		args = append(args, "--leader-elect", "--leader-elect-namespace="+spec.Namespace)
	case !spec.Peering:
		args = append(args, "--standalone")
	}
	if spec.Webhooks {
		// The API server calls the webhooks through the Service below; the
		// replicas share one CA through the Secret.
		args = append(args, "--webhook-service="+spec.Name+"-webhooks", "--webhook-secret="+spec.Name+"-webhooks-certs")
	}
	return append(args,
		fmt.Sprintf("--liveness=http://0.0.0.0:%d/healthz", HealthPort),
		fmt.Sprintf("--metrics-addr=0.0.0.0:%d", MetricsPort),
		"--log-format=json")
}

func deployment(spec Spec, meta metav1.ObjectMeta, labels map[string]string) *appsv1.Deployment {
	no, yes := false, true
	uid := int64(65532)
	grace := int64(60)
	ports := []corev1.ContainerPort{
		{Name: "health", ContainerPort: HealthPort},
		{Name: "metrics", ContainerPort: MetricsPort},
	}
	if spec.Webhooks {
		ports = append(ports, corev1.ContainerPort{Name: "webhooks", ContainerPort: spec.WebhookPort})
	}
	probe := func(path string, period int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("health")}},
			PeriodSeconds: period}
	}
	strategy := appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	if spec.Replicas > 1 {
		// Replicas elect or share: a rolling update keeps one serving.
		strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType}
	}
	replicas := spec.Replicas
	return &appsv1.Deployment{TypeMeta: typeMeta("apps/v1", "Deployment"), ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
		Replicas: &replicas,
		Strategy: strategy,
		Selector: &metav1.LabelSelector{MatchLabels: selector(spec)},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{
				ServiceAccountName:            spec.Name,
				TerminationGracePeriodSeconds: &grace,
				SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid,
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
				Containers: []corev1.Container{{
					Name:  "operator",
					Image: spec.Image,
					Args:  Args(spec),
					Env: []corev1.EnvVar{
						{Name: "POD_ID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
						{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
					},
					Ports:          ports,
					LivenessProbe:  probe("/healthz", 30),
					ReadinessProbe: probe("/readyz", 5),
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
						Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
					},
					SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
						Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
					VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
				}},
				Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			},
		},
	}}
}

// PeeringCRDs are Kopf's peering CRDs (kopf.dev), as Kopf's peering.yaml
// defines them.
func PeeringCRDs() []any {
	crd := func(kind, plural, scope string) map[string]any {
		return map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": plural + ".kopf.dev"},
			"spec": map[string]any{
				"scope": scope, "group": "kopf.dev",
				"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind)},
				"versions": []any{map[string]any{
					"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{
						"type": "object",
						"properties": map[string]any{"status": map[string]any{
							"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
					}},
				}},
			},
		}
	}
	return []any{crd("ClusterKopfPeering", "clusterkopfpeerings", "Cluster"), crd("KopfPeering", "kopfpeerings", "Namespaced")}
}

// PeeringObjects are the "default" peering objects of operators serving
// served: a KopfPeering in each plainly named namespace; for the whole
// cluster (or patterns), a ClusterKopfPeering and, as Kopf's peering.yaml
// has it, a KopfPeering in "default" for operators run there with -n.
func PeeringObjects(served []string) []any {
	nss, exact := resources.NewNamespaces(served).Exact()
	var out []any
	if !exact || len(nss) == 0 {
		out = append(out, map[string]any{"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": map[string]any{"name": "default"}})
		nss = []string{"default"}
	}
	for _, ns := range nss {
		out = append(out, map[string]any{"apiVersion": "kopf.dev/v1", "kind": "KopfPeering",
			"metadata": map[string]any{"name": "default", "namespace": ns}})
	}
	return out
}

// Marshal writes objs as one YAML stream, with header as its first comment.
func Marshal(header string, objs []Object) ([]byte, error) {
	var b bytes.Buffer
	writeHeader(&b, header)
	for _, o := range objs {
		m, err := tidy(o.Object)
		if err != nil {
			return nil, err
		}
		data, err := rbac.Marshal(rbac.Object{Object: m, Rules: o.Rules})
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return b.Bytes(), nil
}

func writeHeader(b *bytes.Buffer, header string) {
	for line := range strings.SplitSeq(strings.TrimRight(header, "\n"), "\n") {
		b.WriteString(strings.TrimRight("# "+line, " ") + "\n")
	}
}

// tidy turns a typed object into its JSON form without what marshalling
// adds that nobody wrote: the status, an empty spec, null creation times.
func tidy(obj any) (map[string]any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("cannot write the manifest: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("cannot write the manifest: %w", err)
	}
	delete(m, "status")
	if spec, ok := m["spec"].(map[string]any); ok && len(spec) == 0 {
		delete(m, "spec")
	}
	for _, meta := range []any{m["metadata"], nested(m, "spec", "template", "metadata")} {
		if meta, ok := meta.(map[string]any); ok && meta["creationTimestamp"] == nil {
			delete(meta, "creationTimestamp")
		}
	}
	return m, nil
}

func nested(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// WriteDir writes objs into dir as a kustomize base (kustomization.yaml
// and a file per part); the CRDs and the peering objects, which a single
// apply cannot create together, go into bases of their own, crds/ and
// peering/, applied in that order before dir itself. It returns the
// commands to apply them, in order.
func WriteDir(dir, header string, objs []Object) ([]string, error) {
	byFile := map[string][]Object{}
	var files []string
	for _, o := range objs {
		if byFile[o.File] == nil {
			files = append(files, o.File)
		}
		byFile[o.File] = append(byFile[o.File], o)
	}
	bases := map[string][]string{} // directory → its files
	for _, f := range files {
		d, name := filepath.Split(f)
		d = filepath.Clean(d)
		bases[d] = append(bases[d], name)
		data, err := Marshal(header, byFile[f])
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			return nil, err
		}
	}
	var commands []string
	for _, d := range []string{"crds", "peering", "."} {
		if bases[d] == nil {
			continue
		}
		k := map[string]any{"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": bases[d]}
		data, err := yaml.Marshal(k)
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		writeHeader(&b, header)
		b.Write(data)
		if err := os.WriteFile(filepath.Join(dir, d, "kustomization.yaml"), b.Bytes(), 0o644); err != nil {
			return nil, err
		}
		target := filepath.Join(dir, d)
		commands = append(commands, "kubectl apply -k "+target)
		if d == "crds" {
			commands = append(commands, "kubectl wait --for=condition=Established crd/clusterkopfpeerings.kopf.dev crd/kopfpeerings.kopf.dev")
		}
	}
	return commands, nil
}
