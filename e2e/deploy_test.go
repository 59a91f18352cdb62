//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo/e2e/runner"
)

// dockerBuildStage reads deploy/Dockerfile's build command and its default
// OPERATOR, so that the e2e suite runs what the image build runs (docker
// itself is not available everywhere the suite runs).
func dockerBuildStage(t *testing.T) (operator string, args []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ARG OPERATOR=(\S+)$`).FindSubmatch(data)
	run := regexp.MustCompile(`(?m)^RUN go run -mod=mod github\.com/kopfgo/kopfgo/cmd/kopfgo (build .*)$`).FindSubmatch(data)
	if m == nil || run == nil {
		t.Fatal("deploy/Dockerfile has no ARG OPERATOR=... or RUN go run -mod=mod github.com/kopfgo/kopfgo/cmd/kopfgo build ... line")
	}
	operator = string(m[1])
	return operator, strings.Fields(strings.ReplaceAll(string(run[1]), "${OPERATOR}", operator))
}

// buildImageBinary runs the Dockerfile's kopfgo build, the binary going to
// a temporary directory instead of /out.
func buildImageBinary(t *testing.T) string {
	t.Helper()
	_, args := dockerBuildStage(t)
	bin := filepath.Join(t.TempDir(), "operator")
	for i, a := range args {
		if a == "/out/operator" {
			args[i] = bin
		}
	}
	cmd := exec.Command(kopfgoCLI(t), args...)
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kopfgo %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// startBinary runs an operator binary built by kopfgo build: BIN run ARGS.
func startBinary(t *testing.T, bin string, env []string, args ...string) *runner.Process {
	t.Helper()
	return startProcess(t, bin, append([]string{"run", "--standalone", "--verbose", "--log-format=plain"}, args...), runner.Options{Dir: t.TempDir(), Env: env})
}

// TestDeployBuildStage builds the image's binary as deploy/Dockerfile does
// and runs it, with no Go toolchain involved at run time, as a service
// account with only the ClusterRole kopfgo rbac generates for it.
func TestDeployBuildStage(t *testing.T) {
	bin := buildImageBinary(t)
	operator, _ := dockerBuildStage(t)
	ns := namespace(t)
	kubeconfig, k := serviceAccountKubeconfig(t, ns, "operator")
	manifest := kopfgoRBAC(t, operator, "--name", "kopfgo-e2e-"+ns, "--service-account", "operator", "--service-account-namespace", ns)
	applyRBAC(t, docs(t, manifest))
	waitAllowed(t, k, ns, "kopf.dev", "patch", "kopfexamples/status")
	p := startBinary(t, bin, nil, "-n", ns, "--kubeconfig", kubeconfig)
	createKex(t, ns, objYAML(t))
	waitKex(t, ns, "kopf-example-1", "the example's creation handler to answer", func(u *unstructured.Unstructured) bool {
		msg, _, _ := unstructured.NestedString(u.Object, "status", "create_fn", "message")
		return msg == "hello world"
	})
	for _, l := range p.Lines() {
		if strings.Contains(strings.ToLower(l), "forbidden") {
			t.Errorf("a 403 with the generated role: %s", l)
		}
	}
}
