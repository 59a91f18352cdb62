//go:build e2e

package e2e

import (
	"archive/tar"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kopfgo/kopfgo/e2e/cluster"
	"github.com/kopfgo/kopfgo/e2e/runner"
)

// kopfgoIn runs the kopfgo CLI in kopfgo's checkout and returns its stdout.
func kopfgoIn(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(kopfgoCLI(t), args...)
	cmd.Dir = repoRoot
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kopfgo %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// TestImageBuildPushRun builds the example's image with kopfgo build for
// two platforms into a registry served here, checks what a client pulls,
// builds it again into an OCI layout (the same digest for the same
// source), then runs the binary taken out of the image's layer against the
// cluster with the Deployment's arguments of kopfgo manifests and a token
// of the ServiceAccount those manifests create: under the generated RBAC
// only, as it would run in the cluster.
func TestImageBuildPushRun(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/kopfgo/example:e2e"
	const pkg = "./examples/01-minimal"
	out := kopfgoIn(t, "build", pkg, "--image", ref, "--insecure", "--platform", "linux/amd64,linux/arm64", "--version", "v0.0.1-e2e")
	if !strings.Contains(out, "@sha256:") {
		t.Fatalf("kopfgo build printed no digest: %q", out)
	}

	// What a client pulls: an index of two platforms, each a config of ours.
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(r)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	var amd64 v1.Hash
	for _, d := range im.Manifests {
		platforms = append(platforms, d.Platform.String())
		if d.Platform.Architecture == "amd64" {
			amd64 = d.Digest
		}
	}
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Fatalf("platforms %q", platforms)
	}
	digest, _ := idx.Digest()
	if !strings.Contains(out, digest.String()) {
		t.Errorf("printed %q, the index is %s", out, digest)
	}
	pulled, err := remote.Image(r.Context().Digest(amd64.String()))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if !slices.Equal(c.Entrypoint, []string{"/operator"}) || c.User != "65532:65532" || cf.Architecture != "amd64" {
		t.Errorf("config: entrypoint %q user %q arch %q", c.Entrypoint, c.User, cf.Architecture)
	}
	if c.Labels["org.opencontainers.image.version"] != "v0.0.1-e2e" || c.Labels["org.opencontainers.image.created"] != "1970-01-01T00:00:00Z" {
		t.Errorf("labels %v", c.Labels)
	}

	// Again, into an OCI layout: the amd64 image is the one pushed.
	dir := filepath.Join(t.TempDir(), "layout")
	kopfgoIn(t, "build", pkg, "--oci-layout", dir, "--image", ref, "--platform", "linux/amd64", "--version", "v0.0.1-e2e")
	lp, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	lidx, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	lm, err := lidx.IndexManifest()
	if err != nil || len(lm.Manifests) != 1 {
		t.Fatalf("the layout's index: %v %v", lm, err)
	}
	if lm.Manifests[0].Digest != amd64 {
		t.Errorf("two builds of one source: %s in the registry, %s in the layout", amd64, lm.Manifests[0].Digest)
	}
	img, err := lp.Image(lm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	bin := extractBinary(t, img)
	if v, err := exec.Command(bin, "version").Output(); err != nil || !strings.Contains(string(v), " version v0.0.1-e2e ") {
		t.Errorf("the image's binary says %q, %v", v, err)
	}

	// The manifests, applied; the binary run as their ServiceAccount.
	served := namespace(t)
	install := served + "-op"
	nameArg := "kopfgo-img-" + served
	manifest := kopfgoIn(t, "manifests", pkg, "--image", ref, "--name", nameArg, "--install-namespace", install,
		"-n", served, "--kubeconfig", cluster.Shared(t).Kubeconfig)
	ctx := context.Background()
	t.Cleanup(func() {
		_ = kube(t).CoreV1().Namespaces().Delete(context.Background(), install, metav1.DeleteOptions{})
	})
	if err := cluster.Shared(t).Apply(ctx, []byte(manifest)); err != nil {
		t.Fatalf("applying kopfgo manifests: %v\n%s", err, manifest)
	}
	args := deploymentArgs(t, manifest)
	kubeconfig, k := tokenKubeconfig(t, install, nameArg)
	waitAllowed(t, k, served, "kopf.dev", "patch", "kopfexamples/status")
	for i, a := range args {
		// The pod's ports, on a free port of this machine instead.
		if strings.HasPrefix(a, "--liveness=") {
			args[i] = "--liveness=http://127.0.0.1:0/healthz"
		}
		if strings.HasPrefix(a, "--metrics-addr=") {
			args[i] = "--metrics-addr=127.0.0.1:0"
		}
	}
	p := startProcess(t, bin, append(args, "--kubeconfig", kubeconfig), runner.Options{Dir: t.TempDir()})
	createKex(t, served, objYAML(t))
	waitKex(t, served, "kopf-example-1", "the image's operator to answer", func(u *unstructured.Unstructured) bool {
		msg, _, _ := unstructured.NestedString(u.Object, "status", "create_fn", "message")
		return msg == "hello world"
	})
	for _, l := range p.Lines() {
		if strings.Contains(strings.ToLower(l), "forbidden") {
			t.Errorf("a 403 under the generated RBAC: %s", l)
		}
	}
}

// extractBinary writes the image's /operator to a file.
func extractBinary(t *testing.T, img v1.Image) string {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[len(layers)-1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatal("no /operator in the image's last layer")
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != "operator" {
			continue
		}
		p := filepath.Join(t.TempDir(), "operator")
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// deploymentArgs are the operator container's arguments in a manifest.
func deploymentArgs(t *testing.T, manifest string) []string {
	t.Helper()
	for _, d := range strings.Split(manifest, "\n---\n") {
		if !strings.Contains(d, "\nkind: Deployment\n") {
			continue
		}
		var dep appsv1.Deployment
		if err := yaml.Unmarshal([]byte(d), &dep); err != nil {
			t.Fatal(err)
		}
		return dep.Spec.Template.Spec.Containers[0].Args
	}
	t.Fatalf("no Deployment in:\n%s", manifest)
	return nil
}
