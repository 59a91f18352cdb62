package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/replicas"
)

// peeringFlags are what kopf freeze and kopf resume share.
type peeringFlags struct {
	namespaces          []string
	clusterwide         bool
	id, name            string
	kubeconfig, context string
}

func (f *peeringFlags) bind(cmd *cobra.Command, env string) {
	fs := cmd.Flags()
	fs.StringArrayVarP(&f.namespaces, "namespace", "n", nil, "the namespaces whose KopfPeering to write (repeatable)")
	fs.BoolVarP(&f.clusterwide, "all-namespaces", "A", false, "write the ClusterKopfPeering (for cluster-wide operators)")
	fs.StringVarP(&f.id, "id", "i", "", "the pseudo-peer's identity (default: user@host)")
	fs.StringVarP(&f.name, "peering", "P", "", "the peering object's name (required) [$"+env+"]")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file")
	fs.StringVar(&f.context, "context", "", "kubeconfig context")
}

// touch writes (or, with lifetime 0, removes) the pseudo-peer's record in
// every peering object the flags name.
func (f *peeringFlags) touch(cmd *cobra.Command, env string, priority int, lifetime time.Duration) error {
	if f.name == "" {
		f.name = os.Getenv(env)
	}
	if f.name == "" {
		return fmt.Errorf("--peering is required (or $%s)", env)
	}
	if !f.clusterwide && len(f.namespaces) == 0 {
		return errors.New("say which peering objects: -n NAMESPACE (repeatable) for KopfPeerings, or -A for the ClusterKopfPeering")
	}
	cfg, err := kube.LoadConfig(f.kubeconfig, f.context)
	if err != nil {
		return err
	}
	client, err := kube.NewClient(cfg, kube.ClientOptions{})
	if err != nil {
		return err
	}
	id := f.id
	if id == "" {
		id = replicas.PeerIdentity(true, time.Now())
	}
	me := replicas.Peer{Identity: id, Priority: priority, Lifetime: lifetime, LastSeen: time.Now()}
	res, nss := replicas.Peerings, f.namespaces
	if f.clusterwide {
		res, nss = replicas.ClusterPeerings, []string{""}
	}
	var errs []error
	for _, ns := range nss {
		where := "cluster-wide"
		if ns != "" {
			where = "in namespace " + ns
		}
		if err := replicas.Touch(cmd.Context(), client, res, ns, f.name, me); err != nil {
			if errors.Is(err, kube.ErrGone) {
				err = fmt.Errorf("the peering %q %s does not exist", f.name, where)
			}
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s: %s in peering %q %s.\n", id, map[bool]string{true: "frozen", false: "resumed"}[lifetime > 0], f.name, where)
	}
	return errors.Join(errs...)
}

func newFreezeCommand() *cobra.Command {
	var f peeringFlags
	var (
		priority int
		lifetime int
		dev      bool
		message  string
	)
	cmd := &cobra.Command{
		Use:   "freeze -P PEERING (-n NS... | -A) -t SECONDS [flags]",
		Short: "Pause the operators of a peering (as kopf freeze)",
		Long: `Write a pseudo-peer of high priority into the peering object, so that the
operators of lower priority in it stand by until the record expires after
--lifetime seconds, or until kopfgo resume removes it. Kopf's command of the
same name; Kopf and kopfgo operators both obey it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if lifetime <= 0 {
				return errors.New("--lifetime (-t) is required: how many seconds the freeze lasts unless resumed")
			}
			if dev {
				priority = 666
			}
			_ = message // Kopf accepts a message and keeps it nowhere; so does kopfgo
			return f.touch(cmd, "KOPF_FREEZE_PEERING", priority, time.Duration(lifetime)*time.Second)
		},
	}
	f.bind(cmd, "KOPF_FREEZE_PEERING")
	fs := cmd.Flags()
	fs.IntVarP(&priority, "priority", "p", 100, "the pseudo-peer's priority: operators below it stand by")
	fs.IntVarP(&lifetime, "lifetime", "t", 0, "seconds until the freeze expires (required)")
	fs.BoolVar(&dev, "dev", false, "priority 666")
	fs.StringVarP(&message, "message", "m", "", "a message (accepted for Kopf's command line; not stored, as in Kopf)")
	return cmd
}

func newResumeCommand() *cobra.Command {
	var f peeringFlags
	cmd := &cobra.Command{
		Use:   "resume -P PEERING (-n NS... | -A) [flags]",
		Short: "Resume the operators frozen by kopfgo freeze (as kopf resume)",
		Long:  "Remove the pseudo-peer that kopfgo freeze wrote (the same --id, default user@host).",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.touch(cmd, "KOPF_RESUME_PEERING", 0, 0)
		},
	}
	f.bind(cmd, "KOPF_RESUME_PEERING")
	return cmd
}
