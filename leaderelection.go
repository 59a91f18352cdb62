package kopfgo

import (
	"context"
	"time"

	"github.com/kopfgo/kopfgo/internal/cli"
	"github.com/kopfgo/kopfgo/internal/component"
	"github.com/kopfgo/kopfgo/internal/replicas"
)

// LeaderElection makes one replica of an operator serve while the others
// stand by, on a coordination.k8s.io/v1 Lease held with client-go's leader
// election, as controller-runtime does (compat: replicas-leader-election).
// A replica that is not the leader watches nothing and runs no handlers,
// daemons or timers; one that loses the Lease stops them as on exit and
// campaigns again; one that stops releases the Lease after its handlers
// have finished, so that a successor starts at once. Leader election
// replaces Kopf's peering: the replicas do not peer.
type LeaderElection struct {
	// Enabled turns leader election on (--leader-elect).
	Enabled bool
	// Lease is the Lease's name (--leader-elect-lease); default
	// "kopfgo-operator".
	Lease string
	// Namespace is the Lease's namespace (--leader-elect-namespace);
	// default: $POD_NAMESPACE, else the in-cluster service account's or
	// the kubeconfig context's namespace, else "default".
	Namespace string
	// Identity is this replica's name in the Lease; default: $POD_NAME
	// or the host's name, with a random suffix.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's; zero
	// values are controller-runtime's defaults: 15s, 10s and 2s. A leader
	// that cannot renew within RenewDeadline stands by; the others take the
	// Lease LeaseDuration after its last renewal.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// leaderElection campaigns for the Lease when leader election is enabled:
// the operator stands by until it leads. The campaign ends, releasing the
// Lease, when the component is stopped: after the reactor has stopped.
func (r *run) leaderElection(ctx context.Context) error {
	le := r.op.opts.LeaderElection
	if !le.Enabled {
		return nil
	}
	client, err := r.client()
	if err != nil {
		return err
	}
	c := replicas.ElectionConfig{
		Leases: client.Leases(), Name: le.Lease, Namespace: le.Namespace, Identity: le.Identity,
		Timing: replicas.Timing{LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod},
		Logger: r.logger, Pause: r.standby, Leading: r.obs.Leading,
	}
	if c.Name == "" {
		c.Name = "kopfgo-operator"
	}
	c.Namespace = r.op.leaseNamespace(c.Namespace)
	if c.Identity == "" {
		c.Identity = replicas.HolderIdentity()
	}
	if err := c.Validate(); err != nil {
		return err
	}
	// Standing by from the start: the reactor must not watch before the
	// campaign has begun.
	r.standby.Pause(replicas.ElectionReason)
	component.Ready(ctx)
	if err := replicas.RunElection(ctx, c); err != nil {
		r.logger.Error(err.Error())
	}
	return nil
}

// applyLeaderElection applies the run command's --leader-elect flags.
func applyLeaderElection(le *LeaderElection, f *cli.RunFlags) {
	if f.LeaderElect {
		le.Enabled = true
	}
	setFlag(&le.Lease, f.LeaderElectLease)
	setFlag(&le.Namespace, f.LeaderElectNamespace)
	setFlag(&le.LeaseDuration, f.LeaderElectLeaseDuration)
	setFlag(&le.RenewDeadline, f.LeaderElectRenewDeadline)
	setFlag(&le.RetryPeriod, f.LeaderElectRetryPeriod)
}
