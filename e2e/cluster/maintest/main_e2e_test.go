//go:build e2e

// Package maintest runs cluster.Main the way a user's test package does; the
// cluster package's own e2e tests also run this binary to check that a signal
// stops the shared cluster.
package maintest

import (
	"fmt"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kopfgo/kopfgo/e2e/cluster"
)

var setupCalls int

func TestMain(m *testing.M) {
	cluster.Main(m, func(c *cluster.Cluster) { setupCalls++ })
}

func TestSharedCluster(t *testing.T) {
	c := cluster.Shared(t)
	if setupCalls != 1 {
		t.Errorf("setup called %d times, want 1", setupCalls)
	}
	if got := os.Getenv("KUBECONFIG"); got != c.Kubeconfig {
		t.Errorf("KUBECONFIG=%q, want %q", got, c.Kubeconfig)
	}
	// What an operator under test does: load the kubeconfig from the environment.
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestWaitForSignal is a helper for the cluster package's signal test, not a
// test of its own: it announces the cluster and blocks until killed.
func TestWaitForSignal(t *testing.T) {
	if os.Getenv("KOPFGO_MAINTEST_WAIT") != "1" {
		t.Skip("a helper for TestMainStopsOnSignal in package cluster")
	}
	c := cluster.Shared(t)
	fmt.Printf("DIR=%s\n", c.Dir)
	time.Sleep(time.Minute)
	t.Fatal("no signal came")
}
