package kopfgo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/cli"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/pausing"
	"github.com/kopfgo/kopfgo/internal/peering"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// ErrModes is the error of options that choose contradictory ways to run
// replicas (peering, standalone, leader election).
var ErrModes = errors.New("contradictory replica modes")

// checkModes fails on options that contradict each other: leader election
// replaces peering, so it cannot be combined with a mandatory peering.
func checkModes(o Options, s Settings) error {
	if o.LeaderElection.Enabled && s.Peering.Mandatory && !s.Peering.Standalone && !o.Standalone {
		return fmt.Errorf("%w: leader election (--leader-elect, Options.LeaderElection) and mandatory peering (--peering, Settings.Peering.Mandatory) both choose which replica serves; use one", ErrModes)
	}
	return nil
}

// peer joins the operator's peering (compat: peering-auto): the peering
// object named Settings.Peering.Name, a ClusterKopfPeering for a
// cluster-wide operator, a KopfPeering in each namespace otherwise. Nothing
// is read or written when standalone, or with leader election. stop leaves
// the peering; call it after the reactor has stopped.
func (op *Operator) peer(ctx context.Context, cfg *rest.Config, s Settings, pause *pausing.Switch, logger *slog.Logger, clk clock.WithTicker) (stop func(), _ error) {
	nothing := func() {}
	ps := s.Peering
	if ps.Standalone || op.opts.Standalone || op.opts.LeaderElection.Enabled {
		return nothing, nil
	}
	client, err := kube.NewClient(cfg, kube.ClientOptions{RequestTimeout: s.Networking.RequestTimeout, TrustEnv: s.Networking.TrustEnv})
	if err != nil {
		return nil, err
	}
	client.Retry = kube.Retry{Backoffs: s.Networking.ErrorBackoffs, Clock: clk, Logger: logger}
	nss, exact := resources.NewNamespaces(op.opts.Namespaces).Exact()
	res := peering.Peerings
	if ps.Clusterwide || len(op.opts.Namespaces) == 0 || !exact {
		res, nss = peering.ClusterPeerings, []string{""}
	}
	all, err := client.Discover(ctx)
	if len(all) == 0 && err != nil {
		return nil, fmt.Errorf("cannot discover the peering resources: %w", err)
	}
	served := slices.ContainsFunc(all, func(r resources.Resource) bool { return r.Group == res.Group && r.Plural == res.Plural })
	if !served {
		if !ps.Mandatory {
			logger.Warn(fmt.Sprintf("Peering resource %s is not served, falling back to the standalone mode (apply deploy/peering.yaml to peer, or pass --standalone to say so).", res.Kind))
			return nothing, nil
		}
		// As Kopf: a mandatory peering without its CRD stands by until
		// the operator restarts with the CRD applied.
		const reason = "peering CRD is missing"
		logger.Error(fmt.Sprintf("Peering resource %s is not served, though peering %q is mandatory: standing by (apply deploy/peering.yaml).", res.Kind, ps.Name))
		pause.Pause(reason)
		return nothing, nil
	}
	identity := peering.Identity(false, clk.Now())
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	for _, ns := range nss {
		c := peering.Config{
			Client: client, Resource: res, Namespace: ns, Name: ps.Name, Identity: identity,
			Priority: ps.Priority, Lifetime: ps.Lifetime, Stealth: ps.Stealth, Mandatory: ps.Mandatory,
			Logger: logger, Pause: pause, Clock: clk,
		}
		wg.Go(func() { peering.Run(pctx, c) })
	}
	return func() {
		cancel()
		wg.Wait()
	}, nil
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
