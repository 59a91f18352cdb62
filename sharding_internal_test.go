package kopfgo

import (
	"errors"
	"strings"
	"testing"
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
