//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kopfgo/kopfgo/e2e/cluster"
	"github.com/kopfgo/kopfgo/e2e/runner"
)

// No credential ever reaches the logs, at any level: a --debug run (which
// routes client-go's klog at verbosity 6, every request) handles objects
// through creation, update and deletion, and its whole output is searched
// for the token and the CA certificate; then a run with a rejected token is
// searched for that token.
func TestNoCredentialsInDebugLogs(t *testing.T) {
	shared := cluster.Shared(t)
	ns := namespace(t)
	op := runOperator(t, lifecycleOp, ns, "--debug")
	obj := createKex(t, ns, objYAML(t))
	waitKex(t, ns, obj.GetName(), "handled", handled)
	patchKex(t, ns, obj.GetName(), `{"spec":{"field":"changed"}}`)
	deleteKex(t, ns, obj.GetName())
	waitGone(t, ns, obj.GetName())
	if err := op.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if op.Count("Response verb=") == 0 { // client-go's request lines, routed from klog
		t.Fatal("no klog lines in the debug run: the test would not see what client-go logs")
	}
	ca := shared.RESTConfig().CAData
	secrets := map[string]string{
		"the token":                            shared.Token,
		"the CA certificate (PEM)":             "BEGIN CERTIFICATE",
		"the CA certificate (its base64 text)": pemBody(string(ca)),
		"the CA certificate (kubeconfig form)": base64.StdEncoding.EncodeToString(ca)[:40],
	}
	checkNoSecrets(t, op.Log(), secrets)

	// A token the API server rejects: the errors it causes must not
	// repeat it either.
	bogus := "kopfgo-e2e-bogus-token-0123456789abcdef"
	kc, err := os.ReadFile(shared.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kc), shared.Token) {
		t.Fatal("the kubeconfig does not hold the token as expected")
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(kc), shared.Token, bogus)), 0o600); err != nil {
		t.Fatal(err)
	}
	rejected, err := runner.Start(kopfgoCLI(t), []string{"run", lifecycleOp, "-n", ns, "--standalone", "--debug", "--log-format=plain"},
		runner.Options{Dir: repoRoot, Env: []string{"KUBECONFIG=" + path}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rejected.Kill)
	if err := rejected.WaitFor(context.Background(), "401", 1, waitLong); err != nil {
		if err2 := rejected.WaitFor(context.Background(), "Unauthorized", 1, time.Second); err2 != nil {
			t.Fatalf("the rejected token was never reported: %v\n%s", err, rejected.Tail(40))
		}
	}
	rejected.Kill()
	<-rejected.Done()
	checkNoSecrets(t, rejected.Log(), map[string]string{"the rejected token": bogus})
}

func checkNoSecrets(t *testing.T, log string, secrets map[string]string) {
	t.Helper()
	for what, s := range secrets {
		if s == "" {
			t.Fatalf("%s is empty: nothing to look for", what)
		}
		if i := strings.Index(log, s); i >= 0 {
			start := strings.LastIndex(log[:i], "\n") + 1
			end := strings.Index(log[i:], "\n")
			if end < 0 {
				end = len(log) - i
			}
			t.Errorf("%s appears in the log:\n%.300s", what, log[start:i+end])
		}
	}
}

// pemBody is the first line of base64 text inside a PEM block.
func pemBody(pem string) string {
	for _, l := range strings.Split(pem, "\n") {
		if l != "" && !strings.HasPrefix(l, "-----") {
			return l
		}
	}
	return ""
}
