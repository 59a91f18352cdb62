package kopfgo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kopfgo/kopfgo/internal/cli"
	"github.com/kopfgo/kopfgo/internal/logging"
	"github.com/kopfgo/kopfgo/internal/version"
)

// Main runs the default operator, the one kopfgo.On registers on, with
// Kopf's command line, and exits the process when it stops:
//
//	mybin run [flags]   (or just: mybin [flags])
//
// The flags are those of `kopf run` that apply to kopfgo: -n/--namespace
// (repeatable, patterns), -A/--all-namespaces, --standalone, -v/--verbose,
// -d/--debug, -q/--quiet, --log-format plain|full|json, --log-prefix and
// --no-log-prefix, --log-refkey, plus --kubeconfig and --context; each can
// also be given as a KOPF_RUN_* environment variable, as in Kopf (see
// --help). `kopfgo run ./pkg` builds a main that calls the packages'
// Register functions with On and then Main; a main of your own does the
// same:
//
//	func main() {
//		handlers.Register(kopfgo.On)
//		kopfgo.Main()
//	}
//
// The first SIGINT or SIGTERM stops the operator gracefully; a second one
// exits at once. The exit code is 0 after a clean stop, 1 if the operator
// failed (the error is logged), 2 for a mistake on the command line.
func Main() { MainOperator(defaultOperator) }

// MainOperator is Main for an operator made with New. The command line sets
// the options it names (namespaces, standalone, kubeconfig, context) and
// the logging, unless op was given a Logger of its own.
func MainOperator(op *Operator) {
	root := newRunCommand(op, filepath.Base(os.Args[0]))
	root.AddCommand(NewRunCommand(op), newRBACCommand(op), newManifestsCommand(op), newVersionCommand())
	os.Exit(cli.Execute(root, os.Args[1:], os.Stderr))
}

// NewRunCommand returns the `run` command of Main for op, to add to a cobra
// command line of your own. When the operator fails, the command logs the
// error and returns one whose message is only "exit status 1"; other errors
// are mistakes on the command line, to be printed.
func NewRunCommand(op *Operator) *cobra.Command { return newRunCommand(op, "run") }

func newRunCommand(op *Operator, use string) *cobra.Command {
	return cli.NewRunCommand(use, "Run the operator until SIGINT or SIGTERM", cobra.NoArgs,
		func(cmd *cobra.Command, _ []string, flags *cli.RunFlags) error {
			return runOperator(op, flags, cmd.ErrOrStderr())
		})
}

// runOperator applies the flags to op and runs it until a signal.
func runOperator(op *Operator, flags *cli.RunFlags, stderr io.Writer) error {
	logger := op.applyFlags(flags, stderr)
	ctx, stop := cli.SignalContext(context.Background(), logger, op.ultimateExitingTimeout)
	defer stop()
	err := op.Run(ctx)
	if err != nil && !(ctx.Err() != nil && errors.Is(err, context.Canceled)) {
		logger.Error(err.Error())
		return &cli.ExitCodeError{Code: cli.ExitError}
	}
	return nil
}

// RunWithArgs runs op as `BIN run ARGS...` of Main does (the same flags:
// -n, -A, --verbose, --log-format, …), with its log written to w in the
// format the flags choose, until ctx ends; it handles no signals, and op's
// options are as before once it returns, so that one operator can be run
// again with other arguments. It returns Run's error, or the command
// line's. It is what kopfgotest.Run runs operators with, Kopf's KopfRunner
// for kopfgo, and serves programs with command lines of their own.
func RunWithArgs(ctx context.Context, op *Operator, w io.Writer, args ...string) error {
	var runErr error
	cmd := cli.NewRunCommand("run", "Run the operator", cobra.NoArgs,
		func(cmd *cobra.Command, _ []string, flags *cli.RunFlags) error {
			saved := op.opts
			defer func() { op.opts = saved }()
			logger := op.applyFlags(flags, w)
			runErr = op.Run(ctx)
			if runErr != nil && !(ctx.Err() != nil && errors.Is(runErr, context.Canceled)) {
				logger.Error(runErr.Error())
			} else {
				runErr = nil
			}
			return nil
		})
	cmd.SetArgs(args)
	cmd.SetOut(w)
	cmd.SetErr(w)
	cmd.SilenceUsage = true
	if err := cmd.ExecuteContext(ctx); err != nil {
		return fmt.Errorf("the arguments %q: %w", args, err)
	}
	return runErr
}

// applyFlags sets op's options from the command line and returns the
// logger they make.
func (op *Operator) applyFlags(flags *cli.RunFlags, stderr io.Writer) *slog.Logger {
	if op.opts.Logger == nil {
		op.opts.Logger = logging.New(flags.Logging(stderr))
	}
	// Run sets the filter again, and once more after the startup handlers.
	op.logFilter.Set(op.opts.Settings.Logging.Filter)
	logger := op.logger()
	logging.InstallKlog(logger, flags.Debug)
	switch {
	case flags.AllNamespaces:
		op.opts.Namespaces = nil
	case len(flags.Namespaces) > 0:
		op.opts.Namespaces = flags.Namespaces
	case len(op.opts.Namespaces) == 0:
		logger.Warn("No --namespace or --all-namespaces is given: serving the whole cluster. " +
			"Pass -A to say so explicitly, or -n NS to limit the operator to namespaces.")
	}
	applyPeering(&op.opts, flags)
	if flags.Kubeconfig != "" {
		op.opts.Kubeconfig = flags.Kubeconfig
	}
	if flags.Context != "" {
		op.opts.Context = flags.Context
	}
	if flags.Liveness != "" {
		op.opts.Liveness = flags.Liveness
	}
	if flags.MetricsAddr != "" {
		op.opts.MetricsAddr = flags.MetricsAddr
	}
	if flags.MemoryLimitRatio != 0 {
		op.opts.Settings.Process.MemoryLimitRatio = flags.MemoryLimitRatio
	}
	applyPassCaps(&op.opts.Settings, flags)
	applyWebhookFlags(&op.opts.Settings.Admission, flags)
	if fc := &op.opts.Settings.Networking.FlowControl; flags.MaxRequestsInFlight > 0 {
		fc.MaxWrites, fc.MaxReads = flags.MaxRequestsInFlight, flags.MaxRequestsInFlight
	}
	if flags.NoFlowControl {
		op.opts.Settings.Networking.FlowControl.Disabled = true
	}
	if flags.NoConditions {
		op.opts.Settings.Persistence.Conditions.Disabled = true
	}
	if flags.ConditionsEveryPass {
		op.opts.Settings.Persistence.Conditions.EveryPass = true
	}
	if flags.Strict {
		op.opts.Settings.Scanning.Strict = true
	}
	if flags.ReadyWhileUnresolved {
		op.opts.Settings.Scanning.ReadyWhileUnresolved = true
	}
	applyLeaderElection(&op.opts.LeaderElection, flags)
	applySharding(&op.opts.Sharding, flags)
	return logger
}

// applyPassCaps sets the caps on passes given on the command line; Run
// rejects negative ones, naming the setting.
func applyPassCaps(s *Settings, flags *cli.RunFlags) {
	if flags.MaxWorkers != 0 {
		s.Execution.MaxWorkers = flags.MaxWorkers
	}
	if flags.ResourceRate != 0 {
		s.Queueing.ResourceRate = flags.ResourceRate
	}
	if flags.ResourceBurst != 0 {
		s.Queueing.ResourceBurst = flags.ResourceBurst
	}
	if flags.ObjectInterval != 0 {
		s.Queueing.ObjectInterval = flags.ObjectInterval
	}
}

// newVersionCommand is `BIN version`: the operator's version and commit
// (as kopfgo build stamps them), kopfgo's, and Go's.
func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the operator's version, and kopfgo's and Go's",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), version.Current().String(filepath.Base(os.Args[0])))
		},
	}
}

// newRBACCommand is `BIN rbac`: the RBAC the handlers need, which `kopfgo
// rbac ./pkg` runs after building the operator.
func newRBACCommand(op *Operator) *cobra.Command {
	var o RBACOptions
	cmd := &cobra.Command{
		Use:   "rbac [flags]",
		Short: "Print the least-privilege RBAC roles and bindings the handlers need",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := RBAC(cmd.Context(), op, o)
			if err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "Error:", err)
				return &cli.ExitCodeError{Code: cli.ExitError}
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVarP(&o.Namespaces, "namespace", "n", nil, "the namespaces the operator serves (as for run); none: the whole cluster")
	fs.BoolVar(&o.Namespaced, "namespaced", false, "Roles in each namespace instead of a ClusterRole (needs -n with plain names)")
	fs.StringVar(&o.Name, "name", "kopfgo-operator", "the name of the roles and bindings")
	fs.StringVar(&o.ServiceAccount, "service-account", "", "the service account to bind (default: --name)")
	fs.StringVar(&o.ServiceAccountNamespace, "service-account-namespace", "default", "the service account's namespace")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "the kubeconfig of the cluster that resolves the resources")
	fs.StringVar(&o.Context, "context", "", "the kubeconfig context")
	fs.BoolVar(&o.Standalone, "standalone", false, "no peering objects (as run --standalone)")
	fs.BoolVar(&o.LeaderElection, "leader-elect", false, "grant the leader election's Lease (as run --leader-elect needs)")
	fs.StringVar(&o.LeaseNamespace, "leader-elect-namespace", "", "the Lease's namespace (default: --service-account-namespace)")
	fs.BoolVar(&o.Sharding, "shards", false, "grant the sharding's Leases (as run --shards needs)")
	fs.StringVar(&o.LeaseNamespace, "shards-namespace", "", "the sharding's Leases' namespace (default: --service-account-namespace)")
	return cmd
}
