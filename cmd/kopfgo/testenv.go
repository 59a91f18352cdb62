package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kopfgo/kopfgo/e2e/cluster"
	"github.com/kopfgo/kopfgo/internal/cli"
)

const testenvLong = `Prepare the servers of kopfgo's test kit (kopfgotest) and of make e2e:
build etcd and kube-apiserver from the Go module proxy into the kopfgo cache
(` + "`$KOPFGO_CACHE/bin`, by default ~/.cache/kopfgo/bin" + `), as the first go test
with kopfgotest would, but with no test timeout to race: a cold build takes
5 to 11 minutes on 2 cores, longer than go test's default 10-minute timeout
allows. Later runs find the binaries and return at once.

Progress goes to stderr. Standard output gets the servers' paths as shell
assignments, for eval "$(kopfgo testenv)" or a CI cache; the test kit finds
the binaries in the cache without them.

With --print, nothing is built: the paths are printed if the binaries are
there, and the command fails naming what is missing otherwise.

Without the kopfgo command installed:
  go run github.com/kopfgo/kopfgo/cmd/kopfgo testenv`

func newTestenvCommand() *cobra.Command {
	var printOnly bool
	cmd := &cobra.Command{
		Use:   "testenv [--print]",
		Short: "Build the test servers (etcd, kube-apiserver) into the cache and print where they are",
		Long:  testenvLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return testenv(ctx, printOnly, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&printOnly, "print", false, "build nothing: print the paths if the binaries are there, fail if not")
	return cmd
}

func testenv(ctx context.Context, printOnly bool, stdout, stderr io.Writer) error {
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "kopfgo testenv: "+format+"\n", args...)
	}
	var bins cluster.Binaries
	if printOnly {
		var missing []cluster.Missing
		var err error
		bins, missing, err = cluster.LookupBinaries()
		for _, m := range missing {
			logf("%s is not built (it goes to %s): run kopfgo testenv, or go run github.com/kopfgo/kopfgo/cmd/kopfgo testenv", m.Name, m.Path)
		}
		if errors.Is(err, cluster.ErrNotBuilt) {
			return &cli.ExitCodeError{Code: cli.ExitError}
		}
		if err != nil {
			return err
		}
	} else {
		started := time.Now()
		var err error
		if bins, err = cluster.EnsureBinaries(ctx, logf); err != nil {
			logf("%v", err)
			return &cli.ExitCodeError{Code: cli.ExitError}
		}
		logf("the test servers are ready (%s)", time.Since(started).Round(time.Second))
	}
	fmt.Fprintf(stdout, "export %s=%s\n", cluster.EnvEtcd, bins.Etcd)
	fmt.Fprintf(stdout, "export %s=%s\n", cluster.EnvKubeAPIServer, bins.APIServer)
	return nil
}
