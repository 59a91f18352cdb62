package main

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

const rbacLong = `Print the least-privilege RBAC roles and bindings that the handlers the
PATHs register need, as YAML for kubectl apply: for each served resource
list, watch, patch and get, patch of its status subresource when it has one
(handlers' results go there), create on Events, list and watch on CRDs (new
resources are served as their CRDs appear), list, watch and patch on the
peering objects unless --standalone, --leader-elect or --shards. The operator is built as for
kopfgo run and asked (BIN rbac); the resources are resolved against the
cluster of the kubeconfig, so their CRDs must exist.

Flags:
  -n, --namespace NS                 the namespaces served (as for run); repeatable
      --namespaced                   Roles per namespace instead of a ClusterRole
      --name NAME                    the roles' and bindings' name (default kopfgo-operator)
      --service-account SA           the service account to bind (default: --name)
      --service-account-namespace NS the service account's namespace (default "default")
      --standalone                   no peering: leave out the peering objects (KopfPeerings)
      --leader-elect                 grant the leader election's Lease (get, create, update)
      --leader-elect-namespace NS    the Lease's namespace (default: --service-account-namespace)
      --shards                       grant the sharding's Leases (get, list, create, update, delete)
      --shards-namespace NS          their namespace (default: --service-account-namespace)
      --kubeconfig FILE, --context CTX`

// rbacValueFlags are the operator's rbac flags that take a value.
var rbacValueFlags = []string{"-n", "--namespace", "--name", "--service-account", "--service-account-namespace", "--kubeconfig", "--context", "--leader-elect-namespace", "--shards-namespace"}

func newRBACCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rbac PATH... [flags]",
		Short: "Print the least-privilege RBAC the handlers need",
		Long:  rbacLong,
		// The flags are the operator's own (BIN rbac --help), passed on.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if slices.Contains(args, "-h") || slices.Contains(args, "--help") {
				return cmd.Help()
			}
			paths, flags := splitRBACArgs(args)
			if len(paths) == 0 {
				return errors.New("requires at least one PATH: a Go package (directory, import path or pattern) that registers handlers")
			}
			r := &runner{stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}
			return r.runSubcommand(cmd.Context(), paths, append([]string{"rbac"}, flags...))
		},
	}
}

// splitRBACArgs separates the PATHs from the flags and their values.
func splitRBACArgs(args []string) (paths, flags []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			paths = append(paths, a)
			continue
		}
		flags = append(flags, a)
		if slices.Contains(rbacValueFlags, a) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return paths, flags
}

// runSubcommand builds the operator of paths and runs it with args (a
// subcommand of kopfgo.Main other than run), passing its output and exit
// code on.
func (r *runner) runSubcommand(ctx context.Context, paths, args []string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := r.setup(paths); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "kopfgo-rbac-")
	if err != nil {
		return r.fail(paths, err)
	}
	defer os.RemoveAll(tmp)
	bin, err := r.build(ctx, paths, tmp, "")
	if err != nil {
		return err
	}
	return r.exec(bin, args, nil)
}
