package replicas

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/user"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kopfgo/kopfgo/internal/pyrepr"
)

// Peer is one operator's record in a peering object.
type Peer struct {
	Identity string
	Priority int
	Lifetime time.Duration
	LastSeen time.Time
}

// DefaultLifetime is the lifetime of a record without one (Kopf's
// hard-coded 60 seconds).
const DefaultLifetime = 60 * time.Second

// Deadline is when the peer is presumed dead if it has not renewed.
func (p Peer) Deadline() time.Time { return p.LastSeen.Add(p.Lifetime) }

// Dead tells whether the peer's record has expired at now.
func (p Peer) Dead(now time.Time) bool { return !p.Deadline().After(now) }

// Record is the peer's record as Kopf writes it.
func (p Peer) Record() map[string]any {
	return map[string]any{
		"priority": int64(p.Priority),
		"lifetime": int64(p.Lifetime / time.Second),
		"lastseen": isoformat(p.LastSeen),
	}
}

// String is Kopf's repr of a peer, as its log lines show peers.
func (p Peer) String() string {
	return fmt.Sprintf("<Peer %s: priority=%d, lifetime=%d, lastseen=%s>",
		p.Identity, p.Priority, int64(p.Lifetime/time.Second), pyrepr.Repr(isoformat(p.LastSeen)))
}

// isoformat is Python's datetime.isoformat() of an aware UTC time.
func isoformat(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond()/1000 == 0 {
		return t.Format("2006-01-02T15:04:05") + "+00:00"
	}
	return t.Format("2006-01-02T15:04:05.000000") + "+00:00"
}

// parseTime reads lastseen as Kopf's iso8601.parse_date does: ISO 8601 with
// or without fractions and zone (UTC when none).
func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05.999999999Z0700", "2006-01-02 15:04:05.999999999Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("lastseen %q is not an ISO 8601 time", s)
}

// Peers reads the records of a peering object's status. A record that
// cannot be read is reported in errs and treated as Kopf would treat a
// record without its fields: seen now, with the default lifetime.
func Peers(status map[string]any, now time.Time) (peers []Peer, errs []error) {
	ids := make([]string, 0, len(status))
	for id := range status {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		p := Peer{Identity: id, Lifetime: DefaultLifetime, LastSeen: now}
		rec, ok := status[id].(map[string]any)
		if !ok {
			if status[id] != nil {
				errs = append(errs, fmt.Errorf("the record of peer %s is not a mapping: %v", id, status[id]))
			}
			continue
		}
		if v, ok := number(rec["priority"]); ok {
			p.Priority = int(v)
		}
		if v, ok := number(rec["lifetime"]); ok {
			p.Lifetime = time.Duration(v) * time.Second
		}
		if s, ok := rec["lastseen"].(string); ok {
			if t, err := parseTime(s); err == nil {
				p.LastSeen = t
			} else {
				errs = append(errs, fmt.Errorf("peer %s: %w", id, err))
			}
		}
		peers = append(peers, p)
	}
	return peers, errs
}

func number(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		return int64(n), true
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	}
	return 0, false
}

// PeerView is what an operator makes of the peers it sees (not a verdict:
// that word is the handling engine's, for a handler's outcome).
type PeerView struct {
	Dead     []Peer // to be removed from the peering object
	Higher   []Peer // live peers of a higher priority: stand by for them
	Same     []Peer // live peers of the same priority: everyone stands by
	Blocking []Peer // Higher and Same: when they expire, look again
}

// Survey sorts the peers for the operator of identity and priority.
func Survey(peers []Peer, identity string, priority int, now time.Time) PeerView {
	var v PeerView
	for _, p := range peers {
		switch {
		case p.Dead(now):
			v.Dead = append(v.Dead, p)
		case p.Identity == identity:
		case p.Priority > priority:
			v.Higher = append(v.Higher, p)
		case p.Priority == priority:
			v.Same = append(v.Same, p)
		}
	}
	v.Blocking = append(append([]Peer(nil), v.Same...), v.Higher...)
	return v
}

// Identity is an operator's identity as Kopf builds it: $POD_ID, else
// user@host (manual, for freeze and resume), else user@host/started/random.
func PeerIdentity(manual bool, now time.Time) string {
	if pod, ok := os.LookupEnv("POD_ID"); ok {
		return pod
	}
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	if manual {
		return name + "@" + host
	}
	const letters = "abcdefhijklmnopqrstuvwxyz0123456789" // Kopf's, without g
	var rnd strings.Builder
	for range 3 {
		rnd.WriteByte(letters[rand.IntN(len(letters))])
	}
	return fmt.Sprintf("%s@%s/%s/%s", name, host, now.UTC().Format("20060102150405"), rnd.String())
}

// reprList is Kopf's repr of a list of peers.
func reprList(peers []Peer) string {
	parts := make([]string, len(peers))
	for i, p := range peers {
		parts[i] = p.String()
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
