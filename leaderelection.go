package kopfgo

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kopfgo/kopfgo/internal/cli"
	"github.com/kopfgo/kopfgo/internal/leaderelection"
	"github.com/kopfgo/kopfgo/internal/leases"
	"github.com/kopfgo/kopfgo/internal/pausing"
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

// campaign starts the leader election when it is enabled: the operator
// stands by until it leads. stop ends the campaign, releasing the Lease,
// and waits for it; call it after the reactor has stopped.
func (op *Operator) campaign(ctx context.Context, cfg *rest.Config, pause *pausing.Switch, logger *slog.Logger, obs *observability) (stop func(), _ error) {
	le := op.opts.LeaderElection
	if !le.Enabled {
		return func() {}, nil
	}
	clients, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c := leaderelection.Config{
		Leases: clients.CoordinationV1(), Name: le.Lease, Namespace: le.Namespace, Identity: le.Identity,
		Timing: leases.Timing{LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod},
		Logger: logger, Pause: pause, Leading: obs.Leading,
	}
	if c.Name == "" {
		c.Name = "kopfgo-operator"
	}
	c.Namespace = op.leaseNamespace(c.Namespace)
	if c.Identity == "" {
		c.Identity = leases.Identity()
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	// Standing by from the start: the reactor must not watch before the
	// campaign has begun.
	pause.Pause(leaderelection.Reason)
	// The campaign outlives ctx: it releases the Lease when stop is called.
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := leaderelection.Run(lctx, c); err != nil {
			logger.Error(err.Error())
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}, nil
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
