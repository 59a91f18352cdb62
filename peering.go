package kopfgo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/kopfgo/kopfgo/internal/cli"
	"github.com/kopfgo/kopfgo/internal/component"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/replicas"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// ErrModes is the error of options that choose contradictory ways to run
// replicas: standalone, peering, leader election, sharding.
var ErrModes = errors.New("contradictory replica modes")

// checkModes fails on options that contradict each other. The modes are
// standalone (one replica), peering (Kopf's: the others stand by),
// leader election (one replica serves) and sharding (all serve, each
// its shards); leader election and sharding replace peering, so neither
// goes with a mandatory peering, nor with the other.
func checkModes(o Options, s Settings) error {
	const (
		le       = "leader election (--leader-elect, Options.LeaderElection)"
		sharded  = "sharding (--shards, Options.Sharding)"
		peerings = "mandatory peering (--peering, Settings.Peering.Mandatory)"
	)
	mandatory := s.Peering.Mandatory && !s.Peering.Standalone && !o.Standalone
	var errs []error
	if o.Sharding.Shards < 0 {
		errs = append(errs, fmt.Errorf("the number of shards (--shards, Options.Sharding.Shards) is %d; want 1 or more, or 0 for no sharding", o.Sharding.Shards))
	}
	if o.LeaderElection.Enabled && o.Sharding.Shards != 0 {
		errs = append(errs, fmt.Errorf("%w: %s makes one replica serve and %s makes every replica serve its shards; use one", ErrModes, le, sharded))
	}
	if o.LeaderElection.Enabled && mandatory {
		errs = append(errs, fmt.Errorf("%w: %s and %s both choose which replica serves; use one", ErrModes, le, peerings))
	}
	if o.Sharding.Shards != 0 && mandatory {
		errs = append(errs, fmt.Errorf("%w: %s and %s both choose which replica serves; use one", ErrModes, sharded, peerings))
	}
	return errors.Join(errs...)
}

// peering joins the operator's peering (compat: peering-auto): the
// peering object named Settings.Peering.Name, a ClusterKopfPeering for a
// cluster-wide operator, a KopfPeering in each namespace otherwise. Nothing
// is read or written when standalone, or with leader election or sharding.
// The operator leaves the peering when the component is stopped: after the
// reactor has stopped.
func (r *run) peering(ctx context.Context) error {
	op, s := r.op, r.settings
	ps := s.Peering
	if ps.Standalone || op.opts.Standalone || op.opts.LeaderElection.Enabled || op.opts.Sharding.Shards != 0 {
		return nil
	}
	client, err := r.client()
	if err != nil {
		return err
	}
	client.Retry = kube.Retry{Backoffs: s.Networking.ErrorBackoffs, Clock: r.clock, Logger: r.logger}
	nss, exact := resources.NewNamespaces(op.opts.Namespaces).Exact()
	res := replicas.Peerings
	if ps.Clusterwide || len(op.opts.Namespaces) == 0 || !exact {
		res, nss = replicas.ClusterPeerings, []string{""}
	}
	all, err := client.Discover(ctx)
	if len(all) == 0 && err != nil {
		return fmt.Errorf("cannot discover the peering resources: %w", err)
	}
	served := slices.ContainsFunc(all, func(r resources.Resource) bool { return r.Group == res.Group && r.Plural == res.Plural })
	if !served {
		if !ps.Mandatory {
			r.logger.Warn(fmt.Sprintf("Peering resource %s is not served, falling back to the standalone mode (apply deploy/crds, then deploy/peering, to peer: kubectl apply -k; or pass --standalone to say so).", res.Kind))
			return nil
		}
		// As Kopf: a mandatory peering without its CRD stands by until
		// the operator restarts with the CRD applied.
		const reason = "peering CRD is missing"
		r.logger.Error(fmt.Sprintf("Peering resource %s is not served, though peering %q is mandatory: standing by (apply deploy/crds, then deploy/peering: kubectl apply -k).", res.Kind, ps.Name))
		r.standby.Pause(reason)
		return nil
	}
	identity := replicas.PeerIdentity(false, r.clock.Now())
	component.Ready(ctx)
	var wg sync.WaitGroup
	for _, ns := range nss {
		c := replicas.PeeringConfig{
			Client: client, Resource: res, Namespace: ns, Name: ps.Name, Identity: identity,
			Priority: ps.Priority, Lifetime: ps.Lifetime, Stealth: ps.Stealth, Mandatory: ps.Mandatory,
			Logger: r.logger, Pause: r.standby, Clock: r.clock,
		}
		wg.Go(func() { replicas.RunPeering(ctx, c) })
	}
	wg.Wait()
	return nil
}

// applyPeering applies the run command's peering flags, as Kopf's run does:
// --peering makes the peering mandatory, --dev is priority 666.
func applyPeering(o *Options, f *cli.RunFlags) {
	p := &o.Settings.Peering
	if f.Standalone {
		o.Standalone = true
		p.Standalone = true
	}
	if f.Peering != "" {
		p.Name = f.Peering
		p.Mandatory = true
	}
	if f.Priority != nil {
		p.Priority = *f.Priority
	}
	if f.Dev {
		p.Priority = 666
	}
}
