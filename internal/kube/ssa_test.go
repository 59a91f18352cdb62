package kube

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	discoveryfake "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kopfgo/kopfgo/internal/resources"
)

// A kind's resource comes from one discovery request of its
// group-version, cached; a kind that is not there is ErrUnresolved.
func TestResourceOfDiscoversOnceAGroupVersion(t *testing.T) {
	fake := &clienttesting.Fake{Resources: []*metav1.APIResourceList{{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
		{Name: "deployments/status", Kind: "Deployment", Namespaced: true},
		{Name: "deployments", SingularName: "deployment", Kind: "Deployment", Namespaced: true},
	}}, {GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "namespaces", Kind: "Namespace"},
	}}}}
	c := &Client{Discovery: &discoveryfake.FakeDiscovery{Fake: fake}}
	for range 2 {
		res, err := c.ResourceOf(t.Context(), "apps/v1", "Deployment")
		if err != nil || res.Plural != "deployments" || res.Group != "apps" || res.Version != "v1" || !res.Namespaced {
			t.Fatalf("ResourceOf(apps/v1, Deployment) = %+v, %v", res, err)
		}
	}
	if n := len(fake.Actions()); n != 1 {
		t.Errorf("%d discovery requests for one group-version, want 1", n)
	}
	if res, err := c.ResourceOf(t.Context(), "v1", "Namespace"); err != nil || res.Plural != "namespaces" || res.Namespaced {
		t.Errorf("ResourceOf(v1, Namespace) = %+v, %v", res, err)
	}
	if _, err := c.ResourceOf(t.Context(), "apps/v1", "Deploymnet"); !errors.Is(err, resources.ErrUnresolved) {
		t.Errorf("an unknown kind: %v, want ErrUnresolved", err)
	}
}
