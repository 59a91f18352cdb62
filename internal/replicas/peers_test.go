package replicas

import (
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 24, 4, 0, 0, 0, time.UTC)

// Records as Kopf writes them (Peer.as_dict with datetime.isoformat()).
func TestPeersReadsKopfRecords(t *testing.T) {
	status := map[string]any{
		"kopf@pod-1/20261124035000/abc": map[string]any{"priority": int64(100), "lifetime": int64(60), "lastseen": "2026-11-24T03:59:30.123456+00:00"},
		"old@laptop":                    map[string]any{"priority": int64(666), "lifetime": int64(10), "lastseen": "2026-11-24T03:58:00+00:00"},
		"naive":                         map[string]any{"lastseen": "2026-11-24T03:59:59"},
		"left":                          nil,
	}
	peers, errs := Peers(status, now)
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(peers) != 3 {
		t.Fatalf("peers = %v, want 3 (a removed record is no peer)", peers)
	}
	byID := map[string]Peer{}
	for _, p := range peers {
		byID[p.Identity] = p
	}
	k := byID["kopf@pod-1/20261124035000/abc"]
	if k.Priority != 100 || k.Lifetime != time.Minute || !k.LastSeen.Equal(time.Date(2026, 11, 24, 3, 59, 30, 123456000, time.UTC)) || k.Dead(now) {
		t.Errorf("Kopf's record read as %+v", k)
	}
	if !byID["old@laptop"].Dead(now) {
		t.Error("a record past lastseen+lifetime must be dead")
	}
	if n := byID["naive"]; n.Lifetime != DefaultLifetime || n.Priority != 0 || n.Dead(now) {
		t.Errorf("a record without lifetime or priority: %+v", n)
	}
}

func TestRecordIsKopfs(t *testing.T) {
	p := Peer{Identity: "me", Priority: 5, Lifetime: 60 * time.Second, LastSeen: time.Date(2026, 11, 24, 3, 59, 30, 123456789, time.UTC)}
	rec := p.Record()
	if rec["priority"] != int64(5) || rec["lifetime"] != int64(60) || rec["lastseen"] != "2026-11-24T03:59:30.123456+00:00" {
		t.Errorf("record = %v", rec)
	}
	p.LastSeen = time.Date(2026, 11, 24, 3, 59, 30, 0, time.UTC)
	if got := p.Record()["lastseen"]; got != "2026-11-24T03:59:30+00:00" {
		t.Errorf("lastseen without microseconds = %v, want Python's isoformat", got)
	}
	if got := p.String(); got != "<Peer me: priority=5, lifetime=60, lastseen='2026-11-24T03:59:30+00:00'>" {
		t.Errorf("repr = %s", got)
	}
}

func TestSurvey(t *testing.T) {
	live := func(id string, prio int) Peer {
		return Peer{Identity: id, Priority: prio, Lifetime: time.Minute, LastSeen: now.Add(-10 * time.Second)}
	}
	dead := Peer{Identity: "dead", Priority: 1000, Lifetime: time.Minute, LastSeen: now.Add(-2 * time.Minute)}
	ids := func(ps []Peer) string {
		var s []string
		for _, p := range ps {
			s = append(s, p.Identity)
		}
		return strings.Join(s, ",")
	}
	cases := []struct {
		name               string
		peers              []Peer
		dead, higher, same string
		blocking           int
	}{
		{"alone", []Peer{live("me", 0)}, "", "", "", 0},
		{"a higher peer", []Peer{live("me", 0), live("hi", 10)}, "", "hi", "", 1},
		{"a lower peer", []Peer{live("me", 0), live("lo", -1)}, "", "", "", 0},
		{"the same priority", []Peer{live("me", 0), live("twin", 0)}, "", "", "twin", 1},
		{"a dead higher peer is no reason to stand by", []Peer{live("me", 0), dead}, "dead", "", "", 0},
		{"my own record never blocks me", []Peer{live("me", 0)}, "", "", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Survey(c.peers, "me", 0, now)
			if ids(v.Dead) != c.dead || ids(v.Higher) != c.higher || ids(v.Same) != c.same || len(v.Blocking) != c.blocking {
				t.Errorf("dead %q higher %q same %q blocking %d; want %q %q %q %d",
					ids(v.Dead), ids(v.Higher), ids(v.Same), len(v.Blocking), c.dead, c.higher, c.same, c.blocking)
			}
		})
	}
}

func TestIdentityAsKopfBuildsIt(t *testing.T) {
	t.Setenv("POD_ID", "operator-7d9c-x2")
	if got := PeerIdentity(false, now); got != "operator-7d9c-x2" {
		t.Errorf("with POD_ID: %q", got)
	}
}

func TestReasonIsKopfsToggleName(t *testing.T) {
	if r := (PeeringConfig{Name: "default"}).Reason(); r != "default@None" {
		t.Errorf("cluster-wide: %q", r)
	}
	if r := (PeeringConfig{Name: "team", Namespace: "ns1"}).Reason(); r != "team@ns1" {
		t.Errorf("namespaced: %q", r)
	}
}
