package kube

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDefaultNamespace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	data := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: t}
contexts:
- name: with-ns
  context: {cluster: c, user: u, namespace: team-a}
- name: without-ns
  context: {cluster: c, user: u}
current-context: with-ns
`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ context, want string }{
		{"", "team-a"}, {"with-ns", "team-a"}, {"without-ns", "default"},
	} {
		if got := DefaultNamespace(path, tc.context); got != tc.want {
			t.Errorf("context %q: %q, want %q", tc.context, got, tc.want)
		}
	}
	if got := DefaultNamespace(filepath.Join(dir, "missing"), ""); got != "default" {
		t.Errorf("missing kubeconfig: %q, want default", got)
	}
}
