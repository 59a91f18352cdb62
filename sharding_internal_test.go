package kopfgo

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kopfgo/kopfgo/internal/resources"
)

// The replica modes are explicit: contradictory ones fail naming the
// options (compat: replicas-sharding).
func TestCheckModesNamesTheContradictions(t *testing.T) {
	mandatory := Settings{}
	mandatory.Peering.Mandatory = true
	cases := []struct {
		name  string
		opts  Options
		s     Settings
		modes bool     // errors.Is ErrModes
		want  []string // substrings; none: valid
	}{
		{"standalone", Options{Standalone: true}, Settings{}, false, nil},
		{"peering", Options{}, mandatory, false, nil},
		{"leader election", Options{LeaderElection: LeaderElection{Enabled: true}}, Settings{}, false, nil},
		{"sharding", Options{Sharding: Sharding{Shards: 4}}, Settings{}, false, nil},
		{"sharding, standalone", Options{Standalone: true, Sharding: Sharding{Shards: 4}}, mandatory, false, nil},
		{"sharding and leader election", Options{LeaderElection: LeaderElection{Enabled: true}, Sharding: Sharding{Shards: 4}}, Settings{}, true,
			[]string{"--leader-elect", "--shards"}},
		{"sharding and mandatory peering", Options{Sharding: Sharding{Shards: 4}}, mandatory, true, []string{"--shards", "--peering"}},
		{"leader election and mandatory peering", Options{LeaderElection: LeaderElection{Enabled: true}}, mandatory, true, []string{"--leader-elect", "--peering"}},
		{"negative shards", Options{Sharding: Sharding{Shards: -1}}, Settings{}, false, []string{"--shards", "-1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkModes(c.opts, c.s)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("checkModes: %v, want none", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("checkModes: nil, want an error naming %q", c.want)
			}
			if errors.Is(err, ErrModes) != c.modes {
				t.Errorf("errors.Is(%v, ErrModes) = %v, want %v", err, !c.modes, c.modes)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("checkModes: %v, want it to name %q", err, w)
				}
			}
		})
	}
}

// A sharded operator that manages its webhook configurations needs them
// for the labelling at creation, even without admission handlers of its
// own; without Managed it does not.
func TestShardingRBACGrantsTheManagedWebhooks(t *testing.T) {
	kex := resources.Resource{Group: "kopf.dev", Version: "v1", Plural: "kopfexamples", Kind: "KopfExample", Preferred: true, Namespaced: true}
	for _, managed := range []string{"", "auto.kopf.dev"} {
		opts := Options{Sharding: Sharding{Shards: 4}}
		opts.Settings.Admission.Managed = managed
		op := New(opts)
		op.On.Create("kopfexamples", func(context.Context, *Change) (any, error) { return nil, nil }, ID("create"))
		spec, err := rbacSpec(context.Background(), op, RBACOptions{}, []resources.Resource{kex})
		if err != nil {
			t.Fatal(err)
		}
		if spec.ManagedWebhooks != (managed != "") {
			t.Errorf("Managed %q: ManagedWebhooks = %v", managed, spec.ManagedWebhooks)
		}
	}
}
