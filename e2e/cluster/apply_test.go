package cluster

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func kindsAndNames(objs []*unstructured.Unstructured) string {
	var parts []string
	for _, o := range objs {
		parts = append(parts, o.GetKind()+"/"+o.GetName())
	}
	return strings.Join(parts, " ")
}

func TestDecodeManifest(t *testing.T) {
	for _, tc := range []struct {
		name, manifest, want, wantErr string
	}{
		{name: "empty", manifest: "", want: ""},
		{name: "only separators and comments", manifest: "---\n# nothing\n---\n", want: ""},
		{
			name: "several documents",
			manifest: `---
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
data: {k: v}
---
# a comment between documents

---
apiVersion: v1
kind: Namespace
metadata:
  name: b
`,
			want: "ConfigMap/a Namespace/b",
		},
		{
			name:     "JSON",
			manifest: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}}`,
			want:     "ConfigMap/j",
		},
		{
			name:     "JSON stream",
			manifest: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j1"}} {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j2"}}`,
			want:     "ConfigMap/j1 ConfigMap/j2",
		},
		{
			name: "list",
			manifest: `apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: l1}}
- {apiVersion: v1, kind: Secret, metadata: {name: l2}}
`,
			want: "ConfigMap/l1 Secret/l2",
		},
		{name: "no kind", manifest: "apiVersion: v1\nmetadata: {name: a}\n", wantErr: "document 1"},
		{name: "no apiVersion", manifest: "kind: ConfigMap\nmetadata: {name: a}\n", wantErr: "apiVersion is missing"},
		{name: "bad YAML in second document", manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: [\n", wantErr: "document 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := decodeManifest([]byte(tc.manifest))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := kindsAndNames(objs); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDecodeManifestKeepsIntegers(t *testing.T) {
	objs, err := decodeManifest([]byte("apiVersion: v1\nkind: X\nmetadata: {name: a}\nspec: {replicas: 3}\n"))
	if err != nil {
		t.Fatal(err)
	}
	// int64, not float64: the unstructured helpers reject floats for integers.
	n, found, err := unstructured.NestedInt64(objs[0].Object, "spec", "replicas")
	if err != nil || !found || n != 3 {
		t.Fatalf("spec.replicas = %v (found %v, err %v), want int64 3", n, found, err)
	}
}

func TestSortForApply(t *testing.T) {
	objs, err := decodeManifest([]byte(`
apiVersion: test.kopf.dev/v1
kind: KopfTest
metadata: {name: obj}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crd}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: example.com/v1
kind: Namespace
metadata: {name: not-a-core-namespace}
`))
	if err != nil {
		t.Fatal(err)
	}
	sortForApply(objs)
	want := "Namespace/ns CustomResourceDefinition/crd KopfTest/obj ConfigMap/cm Namespace/not-a-core-namespace"
	if got := kindsAndNames(objs); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
