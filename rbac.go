package kopfgo

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/rbac"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// RBACOptions say whom the roles are for and where the operator runs.
type RBACOptions struct {
	// Namespaces the operator serves (as -n); empty: the whole cluster.
	Namespaces []string
	// Namespaced writes a Role and RoleBinding in each namespace instead
	// of a ClusterRole; CRD scanning and cluster-scoped resources stay in a
	// ClusterRole. Needs plain namespace names.
	Namespaced bool
	// Name of the roles and bindings; default "kopfgo-operator".
	Name string
	// ServiceAccount and ServiceAccountNamespace are the bindings'
	// subject; default Name in "default".
	ServiceAccount, ServiceAccountNamespace string
	// Standalone leaves out the peering objects (as run --standalone);
	// Options.Standalone, Settings.Peering.Standalone and leader election
	// do too.
	Standalone bool
	// LeaderElection grants the leader election's Lease (get, create,
	// update in LeaseNamespace only); Options.LeaderElection.Enabled does
	// too. LeaseNamespace defaults to Options.LeaderElection.Namespace,
	// else ServiceAccountNamespace.
	LeaderElection bool
	LeaseNamespace string
	// Sharding grants the sharding's Leases (get, list, create, update,
	// delete in LeaseNamespace only) and the patch of the served resources
	// (the shard labels); Options.Sharding.Shards does too.
	// LeaseNamespace then defaults to Options.Sharding.Namespace, else
	// ServiceAccountNamespace.
	Sharding bool
	// RESTConfig, or else Kubeconfig and Context, reach the cluster whose
	// discovery resolves the handlers' resources.
	RESTConfig          *rest.Config
	Kubeconfig, Context string
}

// RBAC returns the least-privilege roles and bindings op's handlers need, as
// YAML manifests for kubectl apply: for each served resource list, watch,
// patch (and patch of the status subresource, where handlers' results go),
// get for re-reads; create on Events; list and watch on CRDs unless
// Settings.Scanning.Disabled; create and patch on the webhook configurations
// when there are admission handlers. The resources are resolved against the cluster,
// as the running operator resolves them.
func RBAC(ctx context.Context, op *Operator, o RBACOptions) ([]byte, error) {
	spec, err := rbacSpec(ctx, op, o, nil)
	if err != nil {
		return nil, err
	}
	return rbac.Manifests(spec)
}

// rbacSpec computes what op needs; its resources are resolved against
// offline (from CRD files) if given, else against the cluster.
func rbacSpec(ctx context.Context, op *Operator, o RBACOptions, offline []resources.Resource) (rbac.Spec, error) {
	if err := op.reg.Err(); err != nil {
		return rbac.Spec{}, err
	}
	all := offline
	if all == nil {
		cfg := o.RESTConfig
		if cfg == nil {
			var err error
			if cfg, err = kube.LoadConfig(o.Kubeconfig, o.Context); err != nil {
				return rbac.Spec{}, err
			}
		}
		client, err := kube.NewClient(cfg, kube.ClientOptions{})
		if err != nil {
			return rbac.Spec{}, fmt.Errorf("cannot connect: %w", err)
		}
		var derr error
		all, derr = client.Discover(ctx)
		if len(all) == 0 && derr != nil {
			return rbac.Spec{}, fmt.Errorf("cannot discover the cluster's resources: %w", derr)
		}
	}
	uses := map[string]*rbac.Use{}
	var order []string
	var errs []error
	use := func(sel resources.Selector, f func(*rbac.Use)) {
		found, err := sel.Select(all)
		if err == nil && len(found) == 0 {
			err = resources.ErrUnresolved
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", sel, err))
			return
		}
		for _, r := range found {
			key := r.Plural + "." + r.Group // RBAC has no versions
			if uses[key] == nil {
				uses[key] = &rbac.Use{Resource: r}
				order = append(order, key)
			}
			f(uses[key])
		}
	}
	for _, h := range op.reg.Changing() {
		use(h.Selector, func(u *rbac.Use) { u.Handles = true })
	}
	for _, s := range op.reg.Spawning() {
		use(s.Selector, func(u *rbac.Use) { u.Handles = true })
	}
	for _, h := range op.reg.Events() {
		use(h.Selector, func(u *rbac.Use) { u.Reacts = true })
	}
	op.mu.Lock()
	for _, ix := range op.indexers {
		use(ix.Spec().Selector, func(u *rbac.Use) { u.Indexes = true })
	}
	op.mu.Unlock()
	if len(errs) > 0 {
		hint := "create their CRDs first"
		if offline != nil {
			hint = "give their CRDs with --crd, or no --crd to resolve them in the cluster"
		}
		return rbac.Spec{}, fmt.Errorf("cannot resolve the handlers' resources (%s): %w", hint, errors.Join(errs...))
	}
	defaultNamespace := "default"
	if offline == nil {
		defaultNamespace = kube.DefaultNamespace(o.Kubeconfig, o.Context)
	}
	spec := rbac.Spec{
		Events:   len(op.reg.Changing())+len(op.reg.Spawning())+len(op.reg.Events()) > 0,
		ScanCRDs: !op.opts.Settings.Scanning.Disabled,
		// Settings.Admission.Managed is often set by a startup handler (as
		// in Kopf's example), which does not run here: admission handlers
		// are taken to mean managed configurations. A sharded operator
		// manages them for the labelling at creation alone.
		ManagedWebhooks: len(op.reg.Admissions()) > 0 || ((o.Sharding || op.opts.Sharding.Shards != 0) && op.opts.Settings.Admission.Managed != ""),
		Namespaces:      o.Namespaces, Namespaced: o.Namespaced,
		DefaultNamespace: defaultNamespace,
		Name:             o.Name, ServiceAccount: o.ServiceAccount, ServiceAccountNamespace: o.ServiceAccountNamespace,
	}
	for _, k := range order {
		spec.Uses = append(spec.Uses, *uses[k])
	}
	leading := o.LeaderElection || op.opts.LeaderElection.Enabled
	sharded := o.Sharding || op.opts.Sharding.Shards != 0
	spec.Peering = !(o.Standalone || op.opts.Standalone || op.opts.Settings.Peering.Standalone || leading || sharded)
	switch {
	case sharded:
		spec.Sharding = true
		spec.LeaseNamespace = cmp.Or(o.LeaseNamespace, op.opts.Sharding.Namespace, o.ServiceAccountNamespace, "default")
	case leading:
		spec.LeaseNamespace = cmp.Or(o.LeaseNamespace, op.opts.LeaderElection.Namespace, o.ServiceAccountNamespace, "default")
	}
	return spec, nil
}
