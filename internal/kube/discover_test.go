package kube

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	discoveryfake "k8s.io/client-go/discovery/fake"
)

// brokenGroupDiscovery answers discovery as client-go does when one
// aggregated API group is down: the other groups, and ErrGroupDiscoveryFailed
// naming the broken one.
type brokenGroupDiscovery struct {
	*discoveryfake.FakeDiscovery
}

func (brokenGroupDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	groups := []*metav1.APIGroup{{Name: "kopf.dev", PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "kopf.dev/v1", Version: "v1"}}}
	lists := []*metav1.APIResourceList{{GroupVersion: "kopf.dev/v1", APIResources: []metav1.APIResource{
		{Name: "kopfexamples", SingularName: "kopfexample", Kind: "KopfExample", Namespaced: true, Verbs: []string{"list", "watch", "patch"}},
	}}}
	return groups, lists, &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
		{Group: "metrics.example.com", Version: "v1beta1"}: errors.New("the server is currently unable to handle the request"),
	}}
}

// A broken API group does not stop the operator: the groups that answered
// are served and the failure comes back beside them for a warning (compat:
// resources-broken-apis).
func TestDiscoverSkipsBrokenGroups(t *testing.T) {
	c := &Client{Discovery: brokenGroupDiscovery{&discoveryfake.FakeDiscovery{}}}
	got, err := c.Discover(t.Context())
	var partial *discovery.ErrGroupDiscoveryFailed
	if !errors.As(err, &partial) {
		t.Fatalf("err = %v, want the group discovery failure beside the resources", err)
	}
	if len(got) != 1 || got[0].Plural != "kopfexamples" || got[0].Group != "kopf.dev" || !got[0].Preferred {
		t.Errorf("resources = %+v, want kopfexamples.kopf.dev, preferred", got)
	}
}
