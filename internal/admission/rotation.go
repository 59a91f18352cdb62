package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/config"
)

// certState is what the certificates' Secret keeps. Every replica reads it
// and serves from it, so that all of them agree on one CA; any of them
// advances it when a step of the rotation is due, and a write that loses
// a race is dropped for the winner's.
type certState struct {
	// Bundle is the CA bundle (PEM), the newest CA first; during a
	// rotation the previous CA follows it.
	Bundle []byte
	// CAKey is the newest CA's key: only the newest CA signs.
	CAKey []byte
	// Serving is what the replicas serve until NextAt.
	Serving keyPair
	// Next, signed by the newest CA, is served from NextAt on.
	Next   *keyPair
	NextAt time.Time
	// RetireAt is when the bundle drops all but its newest CA: the expiry
	// of the certificate served before the rotation, after which no
	// replica can serve it anyway.
	RetireAt time.Time

	resourceVersion string
}

// serve is the key pair a replica serves at now.
func (s *certState) serve(now time.Time) keyPair {
	if s.Next != nil && !now.Before(s.NextAt) {
		return *s.Next
	}
	return s.Serving
}

// rotation is the rotation's policy for one server's hosts.
type rotation struct {
	validity, renewBefore, check time.Duration
	// hosts are the names a certificate is issued for; need are those a
	// certificate must name to be kept: the Service's when there is one,
	// so that replicas with addresses of their own keep each other's.
	hosts, need []string
}

// newRotation applies the defaults to the settings and checks them.
func newRotation(cfg config.CertRotation) (rotation, error) {
	r := rotation{validity: cfg.Validity, renewBefore: cfg.RenewBefore, check: cfg.CheckInterval}
	if r.validity <= 0 {
		r.validity = 90 * 24 * time.Hour
	}
	if r.renewBefore <= 0 {
		r.renewBefore = r.validity / 3
	}
	if r.check <= 0 {
		r.check = time.Minute
	}
	if r.renewBefore >= r.validity || r.renewBefore <= r.swapDelay() {
		return rotation{}, fmt.Errorf("the webhook certificates' rotation needs RenewBefore (%s) below Validity (%s) and above 2×CheckInterval (%s): change Settings.Admission.Rotation",
			r.renewBefore, r.validity, r.swapDelay())
	}
	return r, nil
}

// swapDelay is how long a new CA is in the bundle before its certificate
// is served: every replica reads the Secret and publishes the bundle at
// least once in between, so the API server trusts the new certificate
// before any replica presents it.
func (r rotation) swapDelay() time.Duration { return 2 * r.check }

// advance is the state the Secret should have at now, and whether that
// differs from s (nil: no Secret yet). A missing, expired, foreign or
// unfit certificate is replaced at once, since it cannot serve anyway;
// one that is merely due is rotated with an overlap.
func (r rotation) advance(s *certState, now time.Time) (*certState, bool, error) {
	notAfter, ok := r.usable(s, now)
	if !ok {
		fresh, err := r.fresh(now)
		return fresh, true, err
	}
	n := *s
	changed := false
	if n.Next != nil && !now.Before(n.NextAt) {
		n.Serving, n.Next, n.NextAt = *n.Next, nil, time.Time{}
		changed = true
		if notAfter, ok = r.usable(&n, now); !ok {
			fresh, err := r.fresh(now)
			return fresh, true, err
		}
	}
	if !n.RetireAt.IsZero() && !now.Before(n.RetireAt) {
		n.Bundle, n.RetireAt = firstPEM(n.Bundle), time.Time{}
		changed = true
	}
	if n.Next == nil && !now.Before(notAfter.Add(-r.renewBefore)) {
		ca, err := newCA(now, r.validity)
		if err != nil {
			return nil, false, err
		}
		leaf, err := issue(ca, r.hosts, now, r.validity)
		if err != nil {
			return nil, false, err
		}
		// What is served now is signed by the bundle's first CA; older
		// ones can go.
		n.Bundle = append(append([]byte{}, ca.Cert...), firstPEM(n.Bundle)...)
		n.CAKey, n.Next, n.NextAt, n.RetireAt = ca.Key, &leaf, now.Add(r.swapDelay()), notAfter
		changed = true
	}
	return &n, changed, nil
}

// fresh is a new CA and certificate, served at once.
func (r rotation) fresh(now time.Time) (*certState, error) {
	ca, err := newCA(now, r.validity)
	if err != nil {
		return nil, err
	}
	leaf, err := issue(ca, r.hosts, now, r.validity)
	if err != nil {
		return nil, err
	}
	return &certState{Bundle: ca.Cert, CAKey: ca.Key, Serving: leaf}, nil
}

// usable checks that the served certificate chains to the bundle at now
// and names every host, and returns its expiry.
func (r rotation) usable(s *certState, now time.Time) (time.Time, bool) {
	if s == nil {
		return time.Time{}, false
	}
	leaf, err := leafOf(s.Serving.Cert)
	if err != nil {
		return time.Time{}, false
	}
	if _, err := tls.X509KeyPair(s.Serving.Cert, s.Serving.Key); err != nil {
		return time.Time{}, false
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(s.Bundle) {
		return time.Time{}, false
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now}); err != nil {
		return time.Time{}, false
	}
	for _, h := range r.need {
		if h != "" && leaf.VerifyHostname(h) != nil {
			return time.Time{}, false
		}
	}
	return leaf.NotAfter, true
}

// wait is how long until the next check: the check interval, or sooner
// when a step of the rotation falls due.
func (r rotation) wait(s *certState, now time.Time) time.Duration {
	wait := r.check
	due := []time.Time{s.NextAt, s.RetireAt}
	if leaf, err := leafOf(s.serve(now).Cert); err == nil && s.Next == nil {
		due = append(due, leaf.NotAfter.Add(-r.renewBefore))
	}
	for _, t := range due {
		if d := t.Sub(now); !t.IsZero() && d > 0 && d < wait {
			wait = d
		}
	}
	return wait
}

// firstPEM is the first PEM block of a bundle.
func firstPEM(bundle []byte) []byte {
	block, _ := pem.Decode(bundle)
	if block == nil {
		return nil
	}
	return pem.EncodeToMemory(block)
}

// errStale means another replica wrote the Secret first.
var errStale = errors.New("the certificates' Secret was written by another replica")

// secretStore reads and writes the certificates' Secret.
type secretStore interface {
	// get returns nil, nil if there is no Secret.
	get(ctx context.Context) (*certState, error)
	// create fails with errStale if the Secret exists.
	create(ctx context.Context, s *certState) error
	// update fails with errStale if the Secret changed since it was read.
	update(ctx context.Context, s *certState) error
}

// keeper keeps one replica's certificates in line with the Secret.
type keeper struct {
	store  secretStore
	policy rotation
	clock  clock.Clock
	logger *slog.Logger
}

// served is what a replica serves after a sync.
type served struct {
	cert   tls.Certificate
	bundle []byte
}

// sync reads the Secret, advances it if a step is due, and returns what to
// serve and how long until the next sync. A write that loses to another
// replica's is dropped and the Secret read again, so replicas starting
// together end up with the winner's CA.
func (k *keeper) sync(ctx context.Context) (served, time.Duration, error) {
	for range 5 {
		s, err := k.store.get(ctx)
		if err != nil {
			return served{}, 0, err
		}
		now := k.clock.Now()
		next, changed, err := k.policy.advance(s, now)
		if err != nil {
			return served{}, 0, err
		}
		if changed {
			if s == nil {
				err = k.store.create(ctx, next)
			} else {
				next.resourceVersion = s.resourceVersion
				err = k.store.update(ctx, next)
			}
			if errors.Is(err, errStale) {
				continue
			}
			if err != nil {
				return served{}, 0, err
			}
			k.logChange(s, next)
			s = next
		}
		pair := s.serve(now)
		cert, err := tls.X509KeyPair(pair.Cert, pair.Key)
		if err != nil {
			return served{}, 0, fmt.Errorf("cannot load the certificate from the Secret: %w", err)
		}
		return served{cert: cert, bundle: s.Bundle}, k.policy.wait(s, now), nil
	}
	return served{}, 0, fmt.Errorf("the certificates' Secret keeps changing under this replica; check who else writes it")
}

func (k *keeper) logChange(before, after *certState) {
	switch {
	case before == nil || !bytes.Equal(firstPEM(before.Bundle), firstPEM(after.Bundle)) && after.Next == nil:
		k.logger.Info("Issued a new webhook CA and certificate.")
	case after.Next != nil && before.Next == nil:
		k.logger.Info(fmt.Sprintf("Rotating the webhook certificate: a new CA joins the CA bundle; served from %s.", after.NextAt.Format(time.RFC3339)))
	case before.Next != nil && after.Next == nil:
		k.logger.Info("Serving the rotated webhook certificate.")
	case !after.RetireAt.Equal(before.RetireAt):
		k.logger.Info("The previous webhook CA leaves the CA bundle.")
	}
}

// run syncs until ctx ends, first after wait, handing each result to apply.
// A failed sync keeps what is served and is tried again at the next check.
func (k *keeper) run(ctx context.Context, wait time.Duration, apply func(served)) {
	for {
		t := k.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		s, next, err := k.sync(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			k.logger.Warn(fmt.Sprintf("Cannot check the webhook certificates' Secret: %v", err))
			wait = k.policy.check
			continue
		}
		apply(s)
		wait = next
	}
}
