// Command cluster runs a local etcd and kube-apiserver for trying kopfgo
// operators and running tests against them by hand:
//
//	go run ./e2e/cmd/cluster -dir /tmp/kopfgo-cluster
//
// It prints one line, KUBECONFIG=<path>, on stdout once the cluster is ready
// (progress goes to stderr), and runs until SIGINT or SIGTERM, then stops the
// servers. A script can wait for the -ready-file instead of reading stdout.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kopfgo/kopfgo/e2e/cluster"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "cluster: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("dir", "", "directory for data, logs and the kubeconfig; kept and reused by the next run (default: a temporary directory removed on exit)")
	keep := flag.Bool("keep", false, "keep the temporary directory on exit (with no -dir)")
	kubeconfigOut := flag.String("kubeconfig-out", "", "also copy the kubeconfig to this path")
	readyFile := flag.String("ready-file", "", "create this file when the cluster is ready; removed on exit")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (see -help)", flag.Args())
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "cluster: "+format+"\n", args...)
	}

	c, err := cluster.Start(ctx, cluster.Options{Dir: *dir, KeepDir: *keep, Logf: logf})
	if err != nil {
		return err
	}
	// From here on, every exit path must stop the servers.
	err = serve(ctx, c, *kubeconfigOut, *readyFile)
	if stopErr := c.Stop(); stopErr != nil && err == nil {
		err = stopErr
	}
	if err == nil {
		logf("stopped")
	}
	return err
}

func serve(ctx context.Context, c *cluster.Cluster, kubeconfigOut, readyFile string) error {
	if kubeconfigOut != "" {
		data, err := os.ReadFile(c.Kubeconfig)
		if err != nil {
			return err
		}
		if err := os.WriteFile(kubeconfigOut, data, 0o600); err != nil {
			return fmt.Errorf("copying the kubeconfig (-kubeconfig-out): %w", err)
		}
	}
	if readyFile != "" {
		if err := os.WriteFile(readyFile, []byte(c.Kubeconfig+"\n"), 0o644); err != nil {
			return fmt.Errorf("creating the ready file (-ready-file): %w", err)
		}
		// A stale ready file would tell the next script that a dead cluster is up.
		defer os.Remove(readyFile)
	}
	fmt.Printf("KUBECONFIG=%s\n", c.Kubeconfig)
	fmt.Fprintf(os.Stderr, "cluster: ready; apiserver %s; press Ctrl-C to stop\n", c.APIServerURL)
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "cluster: stopping")
	return nil
}
