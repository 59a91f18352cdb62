package rbac

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kopfgo/kopfgo/internal/resources"
)

// Use is what the operator does with one served resource.
type Use struct {
	Resource resources.Resource
	// Handles: changing handlers or daemons/timers, which patch the object
	// (and its status) and re-read it.
	Handles bool
	// Reacts: event handlers, whose results and patches are applied.
	Reacts bool
	// Indexes: indexers only read the watch.
	Indexes bool
}

// Spec is what to grant and to whom.
type Spec struct {
	Uses []Use
	// Events: the operator posts Events (handlers' outcomes, kopfgo.Event).
	Events bool
	// ScanCRDs: the operator watches CRDs to serve new resources.
	ScanCRDs bool
	// ManagedWebhooks: the operator creates and patches its validating and
	// mutating webhook configurations (Settings.Admission.Managed).
	ManagedWebhooks bool
	// Peering: the operator peers (Kopf's peering, unless standalone):
	// it follows and patches its peering objects, ClusterKopfPeerings when
	// it serves the whole cluster, KopfPeerings in its namespaces otherwise.
	Peering bool
	// LeaseNamespace, when set, is where the operator's leader election
	// Lease is: a Role there grants it the Lease, and nothing elsewhere.
	LeaseNamespace string
	// Sharding: the Leases in LeaseNamespace are the sharding's (shards
	// and members), which replicas also list and delete; and the replica
	// holding shard 0 labels the served objects with their shards (patch).
	Sharding bool
	// WebhookSecretNamespace, when set, is where the admission webhooks'
	// certificates' Secret is (--webhook-secret): a Role there grants
	// reading, creating and updating Secrets, and nothing elsewhere.
	WebhookSecretNamespace string
	// Namespaces the operator serves; nil or patterns: cluster-wide.
	Namespaces []string
	// Namespaced writes Roles in each of Namespaces instead of a
	// ClusterRole; what only exists cluster-wide (cluster-scoped resources,
	// CRDs) stays in a ClusterRole.
	Namespaced bool
	// DefaultNamespace gets the Events of cluster-scoped objects.
	DefaultNamespace string
	// Name of the roles and bindings; ServiceAccount and its namespace
	// are the subject.
	Name, ServiceAccount, ServiceAccountNamespace string
}

// Rule is one grant with the reasons for it, for the manifest's comments
// and for 403 messages.
type Rule struct {
	Group    string
	Resource string // "kopfexamples", "kopfexamples/status"
	Verbs    []string
	Why      []string
	// Namespaced rules go to Roles when Spec.Namespaced.
	Namespaced bool
}

// Name is "verb,verb resource.group", as a 403 names it.
func (r Rule) String() string {
	res := r.Resource
	if r.Group != "" {
		res += "." + r.Group
	}
	return strings.Join(r.Verbs, ",") + " " + res
}

// Rules computes the rules of spec, sorted by group and resource.
func Rules(spec Spec) []Rule {
	byKey := map[string]*Rule{}
	add := func(group, resource string, namespaced bool, why string, verbs ...string) {
		key := group + "/" + resource
		r := byKey[key]
		if r == nil {
			r = &Rule{Group: group, Resource: resource, Namespaced: namespaced}
			byKey[key] = r
		}
		for _, v := range verbs {
			if !slices.Contains(r.Verbs, v) {
				r.Verbs = append(r.Verbs, v)
			}
		}
		if !slices.Contains(r.Why, why) {
			r.Why = append(r.Why, why)
		}
	}
	for _, u := range spec.Uses {
		res := u.Resource
		if u.Handles || u.Reacts || u.Indexes {
			add(res.Group, res.Plural, res.Namespaced, "watching", "list", "watch")
		}
		if u.Handles || u.Reacts {
			add(res.Group, res.Plural, res.Namespaced, "progress, diff-base, finalizers and handlers' patches", "patch")
			if res.HasStatus() {
				add(res.Group, res.Plural+"/status", res.Namespaced, "handlers' results and status patches", "patch")
			}
		}
		if u.Handles {
			add(res.Group, res.Plural, res.Namespaced, "re-reads when the watch lags behind the operator's patches", "get")
		}
		if spec.Sharding && (u.Handles || u.Reacts || u.Indexes) {
			add(res.Group, res.Plural, res.Namespaced, "sharding: the shard label on objects without one", "patch")
		}
	}
	if spec.Events {
		add("", "events", true, "posting Events about the objects", "create")
	}
	if spec.ScanCRDs {
		add("apiextensions.k8s.io", "customresourcedefinitions", false, "serving resources whose CRDs appear later", "list", "watch")
	}
	if spec.ManagedWebhooks {
		for _, res := range []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"} {
			add("admissionregistration.k8s.io", res, false, "the managed admission webhook configurations", "create", "patch")
		}
	}
	if spec.Peering {
		if Exact(spec.Namespaces) && len(spec.Namespaces) > 0 {
			add("kopf.dev", "kopfpeerings", true, "peering: the operators' records and keep-alives", "list", "watch", "patch")
		} else {
			add("kopf.dev", "clusterkopfpeerings", false, "peering: the operators' records and keep-alives", "list", "watch", "patch")
		}
	}
	switch {
	case spec.LeaseNamespace != "" && spec.Sharding:
		add("coordination.k8s.io", "leases", true, "sharding: the shards' and replicas' Leases (in namespace "+spec.LeaseNamespace+" only)", "get", "list", "create", "update", "delete")
	case spec.LeaseNamespace != "":
		add("coordination.k8s.io", "leases", true, "leader election (in namespace "+spec.LeaseNamespace+" only)", "get", "create", "update")
	}
	out := make([]Rule, 0, len(byKey))
	for _, r := range byKey {
		verbOrder := map[string]int{"get": 0, "list": 1, "watch": 2, "create": 3, "patch": 4, "update": 5, "delete": 6}
		sort.Slice(r.Verbs, func(i, j int) bool { return verbOrder[r.Verbs[i]] < verbOrder[r.Verbs[j]] })
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Resource < out[j].Resource
	})
	return out
}

// Exact reports whether namespaces are plain names (no patterns), the only
// ones that Roles can be written for.
func Exact(namespaces []string) bool {
	nss, ok := resources.NewNamespaces(namespaces).Exact()
	return ok && len(nss) > 0
}

func policyRules(rules []Rule) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(rules))
	for _, r := range rules {
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{r.Group}, Resources: []string{r.Resource}, Verbs: r.Verbs})
	}
	return out
}

// Object is one role or binding, with the rules it grants (for comments).
type Object struct {
	Object any
	Rules  []Rule
}

// Manifests writes the roles and bindings of spec as a YAML stream, each
// rule's reasons in a comment before it.
func Manifests(spec Spec) ([]byte, error) {
	objs, err := Objects(spec)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# Generated by kopfgo rbac: the least privilege the operator's handlers need.\n")
	for _, o := range objs {
		data, err := Marshal(o)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return b.Bytes(), nil
}

// Marshal writes o as YAML, each rule's reasons in a comment before it.
func Marshal(o Object) ([]byte, error) {
	data, err := yaml.Marshal(o.Object)
	if err != nil {
		return nil, fmt.Errorf("cannot write the manifest: %w", err)
	}
	var b bytes.Buffer
	for _, r := range o.Rules {
		fmt.Fprintf(&b, "# %s: %s\n", r, strings.Join(r.Why, "; "))
	}
	b.Write(bytes.ReplaceAll(data, []byte("  creationTimestamp: null\n"), nil))
	return b.Bytes(), nil
}

// Objects are the roles and bindings of spec, typed (k8s.io/api/rbac/v1).
func Objects(spec Spec) ([]Object, error) {
	if spec.Name == "" {
		spec.Name = "kopfgo-operator"
	}
	if spec.ServiceAccount == "" {
		spec.ServiceAccount = spec.Name
	}
	if spec.ServiceAccountNamespace == "" {
		spec.ServiceAccountNamespace = "default"
	}
	if spec.Namespaced && !Exact(spec.Namespaces) {
		return nil, fmt.Errorf("namespaced RBAC needs plain namespace names (-n NS...): patterns are served cluster-wide and need a ClusterRole")
	}
	rules := Rules(spec)
	var cluster, namespaced, leases []Rule
	for _, r := range rules {
		if r.Group == "coordination.k8s.io" && r.Resource == "leases" {
			leases = append(leases, r)
			continue
		}
		if spec.Namespaced && r.Namespaced {
			namespaced = append(namespaced, r)
		} else {
			cluster = append(cluster, r)
		}
	}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: spec.ServiceAccount, Namespace: spec.ServiceAccountNamespace}}
	var out []Object
	emit := func(obj any, rules []Rule) { out = append(out, Object{Object: obj, Rules: rules}) }
	if len(cluster) > 0 {
		emit(&rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: spec.Name}, Rules: policyRules(cluster)}, cluster)
		emit(&rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: spec.Name}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: spec.Name}}, nil)
	}
	role := func(name, ns string, rules []Rule) {
		emit(&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: policyRules(rules)}, rules)
		emit(&rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}}, nil)
	}
	if len(namespaced) > 0 {
		nss, _ := resources.NewNamespaces(spec.Namespaces).Exact()
		if spec.Events && spec.DefaultNamespace != "" && !slices.Contains(nss, spec.DefaultNamespace) && hasClusterScoped(spec) {
			nss = append(nss, spec.DefaultNamespace) // Events of cluster-scoped objects
		}
		for _, ns := range nss {
			role(spec.Name, ns, namespaced)
		}
	}
	if len(leases) > 0 {
		name := spec.Name + "-leader-election"
		if spec.Sharding {
			name = spec.Name + "-sharding"
		}
		role(name, spec.LeaseNamespace, leases)
	}
	if ns := spec.WebhookSecretNamespace; ns != "" {
		// A Role of its own, apart from Rules: a served resource "secrets"
		// keeps its grants wherever they go.
		role(spec.Name+"-webhook-certs", ns, []Rule{{Resource: "secrets", Namespaced: true, Verbs: []string{"get", "create", "update"},
			Why: []string{"the admission webhooks' CA and certificate, kept and rotated in a Secret (in namespace " + ns + " only)"}}})
	}
	return out, nil
}

func hasClusterScoped(spec Spec) bool {
	return slices.ContainsFunc(spec.Uses, func(u Use) bool { return !u.Resource.Namespaced })
}
