package replicas

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ElectionReason is what a replica that does not lead holds in the Standby.
const ElectionReason = "leader election"

// ElectionConfig is one replica's campaign for one Lease.
type ElectionConfig struct {
	// Leases is kube.Client.Leases: the operator's own client.
	Leases    coordinationv1.LeasesGetter
	Namespace string
	Name      string
	// Identity is this replica's name in the Lease's holderIdentity.
	Identity string
	// Zero durations are controller-runtime's defaults.
	Timing
	Logger *slog.Logger
	Pause  *Standby
	// Leading, if set, is told when this replica starts and stops leading.
	Leading func(bool)
}

// WithDefaults fills the zero durations.
func (c ElectionConfig) WithDefaults() ElectionConfig {
	c.Timing = c.Timing.WithDefaults()
	return c
}

// Validate tells what is wrong with the configuration, naming the options.
func (c ElectionConfig) Validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("the lease name is empty: set LeaderElection.Lease (--leader-elect-lease)"))
	}
	if c.Namespace == "" {
		errs = append(errs, errors.New("the lease namespace is unknown: set LeaderElection.Namespace (--leader-elect-namespace)"))
	}
	errs = append(errs, c.Timing.Validate(leaderelection.JitterFactor))
	return errors.Join(errs...)
}

// Run stands by (cfg.Pause holds ElectionReason) and campaigns for the Lease until
// ctx ends; it serves while it leads and stands by again when it loses the
// Lease. When ctx ends, a Lease held is released: cancel ctx only once the
// reactor has stopped.
func RunElection(ctx context.Context, cfg ElectionConfig) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	where := cfg.Namespace + "/" + cfg.Name
	cfg.Pause.Pause(ElectionReason)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
		Client:     cfg.Leases,
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
	}
	leading := func(on bool) {
		if cfg.Leading != nil {
			cfg.Leading(on)
		}
	}
	cfg.Logger.Info(fmt.Sprintf("Waiting to become the leader of lease %s as %s.", where, cfg.Identity))
	for ctx.Err() == nil {
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   cfg.LeaseDuration,
			RenewDeadline:   cfg.RenewDeadline,
			RetryPeriod:     cfg.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            where,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) {
					cfg.Logger.Info(fmt.Sprintf("Became the leader of lease %s; serving.", where))
					leading(true)
					cfg.Pause.Resume(ElectionReason)
				},
				OnStoppedLeading: func() {
					cfg.Pause.Pause(ElectionReason)
					leading(false)
					if ctx.Err() == nil {
						cfg.Logger.Warn(fmt.Sprintf("Lost the leadership of lease %s; standing by and campaigning again.", where))
					} else {
						cfg.Logger.Info(fmt.Sprintf("Released the lease %s.", where))
					}
				},
				OnNewLeader: func(identity string) {
					if identity != cfg.Identity {
						cfg.Logger.Info(fmt.Sprintf("The lease %s is held by %s; standing by.", where, identity))
					}
				},
			},
		})
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		elector.Run(ctx)
	}
	return nil
}
