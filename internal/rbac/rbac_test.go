package rbac

import (
	"slices"
	"strings"
	"testing"

	"github.com/kopfgo/kopfgo/internal/resources"
)

var kex = resources.Resource{Group: "kopf.dev", Version: "v1", Plural: "kopfexamples", Namespaced: true, Subresources: []string{"status"}}
var pods = resources.Resource{Version: "v1", Plural: "pods", Namespaced: true, Subresources: []string{"status"}}

func TestRules(t *testing.T) {
	got := Rules(Spec{Uses: []Use{{Resource: kex, Handles: true}, {Resource: pods, Indexes: true}}, Events: true, ScanCRDs: true})
	var lines []string
	for _, r := range got {
		lines = append(lines, r.String())
	}
	want := []string{
		"create events",
		"list,watch pods",
		"list,watch customresourcedefinitions.apiextensions.k8s.io",
		"get,list,watch,patch kopfexamples.kopf.dev",
		"patch kopfexamples/status.kopf.dev",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rules:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestManifestsNamespaced(t *testing.T) {
	spec := Spec{Uses: []Use{{Resource: kex, Reacts: true}}, Events: true, ScanCRDs: true,
		Namespaces: []string{"a", "b"}, Namespaced: true, Name: "op", ServiceAccountNamespace: "sys"}
	out, err := Manifests(spec)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{"kind: ClusterRole\n", "kind: ClusterRoleBinding\n", "kind: Role\n", "namespace: a\n", "namespace: b\n",
		"- customresourcedefinitions\n", "- kopfexamples/status\n", "# create events: posting Events"} {
		if !strings.Contains(s, want) {
			t.Errorf("no %q in:\n%s", want, s)
		}
	}
	if strings.Contains(s, "- get\n") {
		t.Errorf("event handlers need no get:\n%s", s)
	}
	spec.Namespaces = []string{"a*"}
	if _, err := Manifests(spec); err == nil {
		t.Error("namespaced RBAC for a pattern: no error")
	}
}

func TestManagedWebhooksRules(t *testing.T) {
	got := Rules(Spec{ManagedWebhooks: true})
	if len(got) != 2 || got[0].String() != "create,patch mutatingwebhookconfigurations.admissionregistration.k8s.io" ||
		got[1].String() != "create,patch validatingwebhookconfigurations.admissionregistration.k8s.io" || got[0].Namespaced {
		t.Errorf("rules = %v", got)
	}
	if got := Rules(Spec{}); len(got) != 0 {
		t.Errorf("without admission: %v", got)
	}
}

// Leader election's Lease is granted in its namespace only, by a Role of
// its own, whatever the operator's other roles are.
func TestLeaderElectionLeaseRole(t *testing.T) {
	out, err := Manifests(Spec{Uses: []Use{{Resource: kex, Handles: true}}, LeaseNamespace: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(out), "---\n")
	var leaseRole, clusterRole string
	for _, d := range docs {
		switch {
		case strings.Contains(d, "\nkind: Role\n") && strings.Contains(d, "name: kopfgo-operator-leader-election"):
			leaseRole = d
		case strings.Contains(d, "\nkind: ClusterRole\n"):
			clusterRole = d
		}
	}
	if !strings.Contains(leaseRole, "namespace: ops") || !strings.Contains(leaseRole, "- coordination.k8s.io") ||
		!strings.Contains(leaseRole, "- leases") || !strings.Contains(leaseRole, "- update") {
		t.Errorf("no Role granting the Lease in ops:\n%s", out)
	}
	if strings.Contains(clusterRole, "leases") {
		t.Errorf("the ClusterRole grants Leases everywhere:\n%s", clusterRole)
	}
	if !strings.Contains(string(out), "kind: RoleBinding") {
		t.Errorf("the Lease's Role is not bound:\n%s", out)
	}
}

// A peering operator follows and patches its peering objects: KopfPeerings
// where it serves namespaces, the ClusterKopfPeering when cluster-wide.
func TestPeeringRules(t *testing.T) {
	find := func(rules []Rule, res string) *Rule {
		for i := range rules {
			if rules[i].Resource == res {
				return &rules[i]
			}
		}
		return nil
	}
	uses := []Use{{Resource: kex, Handles: true}}
	ns := Rules(Spec{Uses: uses, Peering: true, Namespaces: []string{"a", "b"}})
	if r := find(ns, "kopfpeerings"); r == nil || r.Group != "kopf.dev" || strings.Join(r.Verbs, ",") != "list,watch,patch" || !r.Namespaced {
		t.Errorf("namespaced operator: kopfpeerings rule %+v", r)
	}
	cw := Rules(Spec{Uses: uses, Peering: true})
	if r := find(cw, "clusterkopfpeerings"); r == nil || r.Namespaced {
		t.Errorf("cluster-wide operator: clusterkopfpeerings rule %+v", r)
	}
	if find(Rules(Spec{Uses: uses}), "clusterkopfpeerings") != nil {
		t.Error("a standalone operator is granted the peering objects")
	}
}

// Sharding's Leases are granted in their namespace only, with list and
// delete besides leader election's verbs (replicas read each other's
// Leases and delete those of replicas gone).
func TestShardingLeaseRole(t *testing.T) {
	spec := Spec{Uses: []Use{{Resource: kex, Handles: true}}, LeaseNamespace: "ops", Sharding: true}
	var leases *Rule
	for _, r := range Rules(spec) {
		if r.Resource == "leases" {
			leases = &r
		}
	}
	if leases == nil || !leases.Namespaced || strings.Join(leases.Verbs, ",") != "get,list,create,update,delete" {
		t.Fatalf("the sharding's Lease rule: %+v, want get, list, create, update, delete in a namespace", leases)
	}
	out, err := Manifests(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "name: kopfgo-operator-sharding\n  namespace: ops") {
		t.Errorf("no Role kopfgo-operator-sharding in ops:\n%s", out)
	}
}

// With sharding, the replica holding shard 0 labels the objects of every
// served resource with their shards, an indexed one included: patch.
func TestShardingLabelsTheServedResources(t *testing.T) {
	indexed := kex
	indexed.Plural, indexed.Kind = "kopfindexeds", "KopfIndexed"
	spec := Spec{Uses: []Use{{Resource: indexed, Indexes: true}}, LeaseNamespace: "ops"}
	patches := func(spec Spec) bool {
		for _, r := range Rules(spec) {
			if r.Resource == "kopfindexeds" && slices.Contains(r.Verbs, "patch") {
				return true
			}
		}
		return false
	}
	if patches(spec) {
		t.Error("an indexed resource may be patched without sharding")
	}
	spec.Sharding = true
	if !patches(spec) {
		t.Error("with sharding, an indexed resource may not be patched: its objects cannot be labelled with their shards")
	}
}
