package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo/internal/cli"
	"github.com/kopfgo/kopfgo/internal/inspect"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/resources"
)

const inspectLong = `Show where the handling of objects stands, from what Kopf-style operators
keep on the objects: each handler's progress (succeeded, failed, retries,
delayed until, message, started/stopped), the cause of the cycle in progress,
whether the object changed since it was last handled (pending change), and
whether the finalizer is on. Objects handled by Kopf read the same as objects
handled by kopfgo. Only the kubeconfig is needed: no operator runs.

RESOURCE is named as in handlers: plural, kind, short name, plural.group or
group/version/plural.

States: fresh (never handled), in-progress, delayed, failed, done (handled,
unchanged since), changed (handled, changed since: a cycle is due). A handler
that failed permanently is read from its progress record while its cycle
goes on, and from the Stalled condition kopfgo leaves in the object's
status.conditions once the cycle has ended (Kopf's records are purged then;
with conditions off, nothing is left and the object reads as done).

With --stuck, only the stuck objects are listed, and the command exits with
status 3 when there is any, for scripts and probes.`

// exitStuck is inspect --stuck's exit status when some object is stuck.
const exitStuck = 3

type inspectFlags struct {
	namespace, kubeconfig, context, output, prefix, finalizer string
	all, stuck                                                bool
	stuckAfter                                                time.Duration
}

func newInspectCommand() *cobra.Command {
	var f inspectFlags
	cmd := &cobra.Command{
		Use:   "inspect RESOURCE [NAME]",
		Short: "Show each object's handling state: handlers' progress, pending changes, finalizers",
		Long:  inspectLong,
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.output != "table" && f.output != "json" {
				return fmt.Errorf("invalid output format %q: use table or json", f.output)
			}
			return runInspect(cmd.Context(), cmd.OutOrStdout(), f, args)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&f.namespace, "namespace", "n", "", "the namespace (default: the kubeconfig context's)")
	fs.BoolVarP(&f.all, "all-namespaces", "A", false, "objects of all namespaces")
	fs.StringVarP(&f.output, "output", "o", "table", "output format: table or json")
	fs.BoolVar(&f.stuck, "stuck", false, "only objects with failed, long-delayed or long-running handlers; exit status 3 if there is any")
	fs.DurationVar(&f.stuckAfter, "stuck-after", 10*time.Minute, "how long a delay or a cycle may last before the object counts as stuck")
	fs.StringVar(&f.prefix, "prefix", "", "the operator's annotation prefix (default kopf.zalando.org)")
	fs.StringVar(&f.finalizer, "finalizer", "", "the operator's finalizer (default kopf.zalando.org/KopfFinalizerMarker)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "the kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
	fs.StringVar(&f.context, "context", "", "the kubeconfig context")
	return cmd
}

func runInspect(ctx context.Context, out io.Writer, f inspectFlags, args []string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	cfg, err := kube.LoadConfig(f.kubeconfig, f.context)
	if err != nil {
		return err
	}
	client, err := kube.NewClient(cfg, kube.ClientOptions{RequestTimeout: time.Minute})
	if err != nil {
		return fmt.Errorf("cannot connect: %w", err)
	}
	res, err := resolveResource(ctx, client, args[0])
	if err != nil {
		return err
	}
	ns := ""
	if res.Namespaced && !f.all {
		ns = f.namespace
		if ns == "" {
			ns = kube.DefaultNamespace(f.kubeconfig, f.context)
		}
	}
	var items []unstructured.Unstructured
	if len(args) == 2 {
		if res.Namespaced && f.all {
			return errors.New("a NAME needs a namespace: use -n, not -A")
		}
		o, err := client.Get(ctx, res, ns, args[1])
		if err != nil {
			return fmt.Errorf("cannot get %s %s: %w", res.Plural, args[1], err)
		}
		items = append(items, *o)
	} else {
		items, err = client.List(ctx, res, ns)
		if err != nil {
			return fmt.Errorf("cannot list %s: %w", res, err)
		}
	}
	now := time.Now()
	opts := inspect.Options{Prefix: f.prefix, Finalizer: f.finalizer, StuckAfter: f.stuckAfter}
	objs := make([]inspect.Object, 0, len(items))
	for _, it := range items {
		o := inspect.Analyze(it.Object, now, opts)
		if f.stuck && !o.Stuck {
			continue
		}
		objs = append(objs, o)
	}
	if err := write(out, f.output, objs, now); err != nil {
		return err
	}
	if f.stuck && len(objs) > 0 {
		return &cli.ExitCodeError{Code: exitStuck}
	}
	return nil
}

// write prints the reports in the output format.
func write(out io.Writer, format string, objs []inspect.Object, now time.Time) error {
	if format == "json" {
		b, err := inspect.JSON(objs)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	}
	return inspect.Table(out, objs, now)
}

// resolveResource finds the one resource a selector names, in its preferred
// version unless the selector names one.
func resolveResource(ctx context.Context, client *kube.Client, selector string) (resources.Resource, error) {
	sel, err := resources.Parse(selector)
	if err != nil {
		return resources.Resource{}, err
	}
	all, derr := client.Discover(ctx)
	if len(all) == 0 && derr != nil {
		return resources.Resource{}, fmt.Errorf("cannot discover the cluster's resources: %w", derr)
	}
	found, err := sel.Select(all)
	if err != nil {
		return resources.Resource{}, err
	}
	if len(found) == 0 {
		return resources.Resource{}, fmt.Errorf("%s: %w", selector, resources.ErrUnresolved)
	}
	if i := slices.IndexFunc(found, func(r resources.Resource) bool { return r.Preferred }); i >= 0 && sel.Version == "" {
		return found[i], nil
	}
	return found[0], nil
}
