package kopfgo

import (
	"cmp"
	"context"
	"os"
	"time"

	"github.com/kopfgo/kopfgo/internal/admission"
	"github.com/kopfgo/kopfgo/internal/cli"
	"github.com/kopfgo/kopfgo/internal/component"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/replicas"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// Sharding spreads the objects of every served resource over several
// active replicas of an operator, beyond what Kopf does (compat:
// replicas-sharding). An object belongs to the shard its label
// "shard.kopfgo.dev/<Name>" names, FNV-1a of "namespace/name" mod Shards:
// the operator's mutating webhook labels new objects at creation when it
// manages its webhook configurations (Settings.Admission.Managed), and the
// replica holding shard 0 labels the objects that have none. Each replica holds
// the coordination.k8s.io/v1 Leases of some shards, "<Name>-shard-<i>",
// about Shards/replicas of them, watches only their objects (a label
// selector: it never receives the others') and handles only them: their
// handlers, daemons, timers and indices. When a replica
// dies, the others take its shards once its Leases expire; when one joins,
// the others release shards to it. A shard's Lease is released only after
// its handlers have finished and its daemons and timers have returned, and
// a shard is served only after its Lease is acquired, so that no two
// replicas serve one object at once (see internal/replicas for the order);
// each shard is watched apart, so a handover stops and starts only the
// shards that move, and the shards kept are not listed or resumed again.
// Indices are per replica: a replica's indices hold only its shards'
// objects; a resource with a global index (Global) is watched whole on
// every replica. Sharding replaces Kopf's peering: the replicas do not
// peer.
type Sharding struct {
	// Shards is the number of shards (--shards); 0 turns sharding off. It
	// must be the same on every replica, and is best a multiple of the
	// number of replicas, a few times more than the most replicas run.
	Shards int
	// Name prefixes the Leases' names and names the objects' shard label,
	// "shard.kopfgo.dev/<Name>" (--shards-name); default "kopfgo-operator".
	Name string
	// Namespace is the Leases' namespace (--shards-namespace); default:
	// $POD_NAMESPACE, else the in-cluster service account's or the
	// kubeconfig context's namespace, else "default".
	Namespace string
	// Identity is this replica's name in the Leases; default: $POD_NAME or
	// the host's name, with a random suffix.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are as in leader
	// election; zero values are 15s, 10s and 2s. A replica that cannot
	// renew a shard's Lease within RenewDeadline stops serving it; the
	// others take a Lease LeaseDuration after they last saw it renewed, and
	// balance every RetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// sharding joins the operator's sharding when it is enabled: the operator
// stands by until it holds a shard, and r.shards tells the reactor which
// shards' objects it watches. The shards are released when the component
// is stopped: after the reactor has stopped.
func (r *run) sharding(ctx context.Context) error {
	sh := r.op.opts.Sharding
	if sh.Shards == 0 {
		return nil
	}
	client, err := r.client()
	if err != nil {
		return err
	}
	c := replicas.ShardingConfig{
		Leases: client.Leases(), Name: sh.name(), Namespace: r.op.leaseNamespace(sh.Namespace), Shards: sh.Shards,
		Identity: sh.Identity, Timing: replicas.Timing{LeaseDuration: sh.LeaseDuration, RenewDeadline: sh.RenewDeadline, RetryPeriod: sh.RetryPeriod},
		Clock: r.clock, Logger: r.logger, Pause: r.standby, Held: r.obs.ShardsHeld,
	}
	if c.Identity == "" {
		c.Identity = replicas.HolderIdentity()
	}
	if err := c.Validate(); err != nil {
		return err
	}
	// Standing by from the start: the reactor must not serve before the
	// replica holds shards.
	r.standby.Pause(replicas.ShardingReason)
	r.obs.ShardsHeld(nil)
	s := replicas.NewSharder(c)
	r.shards = s.Serving()
	component.Ready(ctx)
	if err := s.Run(ctx); err != nil {
		r.logger.Error(err.Error())
	}
	return nil
}

// name is the sharding's name, or its default.
func (sh Sharding) name() string { return cmp.Or(sh.Name, "kopfgo-operator") }

// shardLabelling are the built-in mutating webhooks that label the served
// resources' new objects with their shards at creation, so that the
// coordinator writes nothing for them: when the operator shards and
// manages its webhook configurations (a configuration of the user's own
// would not call them). Without them, the coordinator labels each new
// object with a patch.
func (r *run) shardLabelling() []*handling.AdmissionHandler {
	sh, adm := r.op.opts.Sharding, r.settings.Admission
	if sh.Shards == 0 || adm.Managed == "" || adm.Server == nil {
		return nil
	}
	scope := resources.NewNamespaces(r.op.opts.Namespaces)
	return admission.ShardLabelling(sh.name(), sh.Shards, r.op.reg.Selectors(), scope.Match)
}

// leaseNamespace is the namespace of the operator's Leases: the one given,
// else $POD_NAMESPACE, else the credentials' context's, else "default".
func (op *Operator) leaseNamespace(given string) string {
	for _, ns := range []string{given, os.Getenv("POD_NAMESPACE"), op.defaultNamespace()} {
		if ns != "" {
			return ns
		}
	}
	return "default"
}

// applySharding applies the run command's --shards flags.
func applySharding(sh *Sharding, f *cli.RunFlags) {
	if f.Shards != 0 {
		sh.Shards = f.Shards
	}
	setFlag(&sh.Name, f.ShardsName)
	setFlag(&sh.Namespace, f.ShardsNamespace)
	setFlag(&sh.LeaseDuration, f.ShardsLeaseDuration)
	setFlag(&sh.RenewDeadline, f.ShardsRenewDeadline)
	setFlag(&sh.RetryPeriod, f.ShardsRetryPeriod)
}

// setFlag sets *dst to a flag's value if the flag was given (not zero).
func setFlag[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}
