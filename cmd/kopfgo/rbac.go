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
                                     and the patch of the served resources (their shard labels)
      --shards-namespace NS          their namespace (default: --service-account-namespace)
      --kubeconfig FILE, --context CTX`

// rbacValueFlags are the operator's rbac flags that take a value.
var rbacValueFlags = []string{"-n", "--namespace", "--name", "--service-account", "--service-account-namespace", "--kubeconfig", "--context", "--leader-elect-namespace", "--shards-namespace"}

func newRBACCommand() *cobra.Command {
	return newSubcommand("rbac PATH... [flags]", "Print the least-privilege RBAC the handlers need", rbacLong, "rbac", rbacValueFlags)
}

const manifestsLong = `Print everything that runs the operator whose handlers the PATHs register
in a cluster, as YAML for kubectl apply: its Namespace and ServiceAccount,
the least-privilege RBAC (as kopfgo rbac computes it), a Deployment of the
image (non-root, read-only root filesystem, no capabilities, probes on the
liveness endpoint), a Service for the metrics and one for admission webhooks
when there are admission handlers (the operator runs with --webhook-service
NAME-webhooks and --webhook-secret NAME-webhooks-certs, which a Role in the
install namespace lets it keep), a PodDisruptionBudget with --replicas
above 1, a ServiceMonitor with --service-monitor, and Kopf's peering CRDs
and objects with --peering. The operator is built as for kopfgo run and
asked (BIN manifests). Its resources are resolved against the cluster of the
kubeconfig, or against CRD files given with --crd (no cluster needed).

  kopfgo manifests ./handlers --image ghcr.io/me/op:v1 | kubectl apply -f -
  kopfgo manifests ./handlers --image ghcr.io/me/op:v1 --crd crd.yaml --out deploy/

Flags:
      --image REF                  the operator's image (required)
      --name NAME                  the objects' name (default kopfgo-operator)
      --install-namespace NS       where the operator runs (default: --name)
  -n, --namespace NS               the namespaces served (as for run); repeatable
      --namespaced                 Roles per namespace instead of a ClusterRole
      --replicas N                 replicas (above 1: needs --leader-elect or --shards)
      --peering                    Kopf's peering (default: --standalone)
      --leader-elect               replicas elect a leader (a Lease)
      --shards N                   replicas share the objects in N shards
      --webhook-port PORT          the admission webhook server's port (default 9443)
      --service-monitor            a ServiceMonitor for Prometheus Operator
      --crd FILE                   resolve resources from CRD files; repeatable
      --out DIR                    a kustomize base instead of a YAML stream
      --kubeconfig FILE, --context CTX`

// manifestsValueFlags are the operator's manifests flags that take a value.
var manifestsValueFlags = []string{"--image", "--name", "--install-namespace", "-n", "--namespace", "--replicas", "--shards",
	"--webhook-port", "--crd", "--out", "--kubeconfig", "--context"}

func newManifestsCommand() *cobra.Command {
	return newSubcommand("manifests PATH... --image REF [flags]", "Print the manifests that run the operator in a cluster",
		manifestsLong, "manifests", manifestsValueFlags)
}

// newSubcommand is a command that builds the operator of its PATHs and runs
// its subcommand sub with the other arguments: the flags are the
// operator's own (BIN sub --help), passed on.
func newSubcommand(use, short, long, sub string, valueFlags []string) *cobra.Command {
	return &cobra.Command{
		Use:                use,
		Short:              short,
		Long:               long,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if slices.Contains(args, "-h") || slices.Contains(args, "--help") {
				return cmd.Help()
			}
			paths, flags := splitArgs(args, valueFlags)
			if len(paths) == 0 {
				return errors.New("requires at least one PATH: a Go package (directory, import path or pattern) that registers handlers")
			}
			r := &runner{stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}
			return r.runSubcommand(cmd.Context(), paths, append([]string{sub}, flags...))
		},
	}
}

// splitArgs separates the PATHs from the flags and their values.
func splitArgs(args, valueFlags []string) (paths, flags []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			paths = append(paths, a)
			continue
		}
		flags = append(flags, a)
		if slices.Contains(valueFlags, a) && i+1 < len(args) {
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
