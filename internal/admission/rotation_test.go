package admission

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// memSecrets is the Secret in memory, with the API server's optimistic
// concurrency: a create of an existing one and an update from a stale
// read both fail with errStale.
type memSecrets struct {
	mu      sync.Mutex
	state   *certState
	version int
	// gets, when set, holds the first `hold` gets until all of them have
	// read (replicas racing).
	gets   *sync.WaitGroup
	hold   int
	writes int
	stale  int
}

func (m *memSecrets) get(context.Context) (*certState, error) {
	m.mu.Lock()
	var s *certState
	if m.state != nil {
		c := *m.state
		s = &c
	}
	gets := m.gets
	if m.hold == 0 {
		gets = nil
	} else {
		m.hold--
	}
	m.mu.Unlock()
	if gets != nil {
		gets.Done()
		gets.Wait()
	}
	return s, nil
}

func (m *memSecrets) create(_ context.Context, s *certState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state != nil {
		m.stale++
		return errStale
	}
	return m.store(s)
}

func (m *memSecrets) update(_ context.Context, s *certState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == nil || s.resourceVersion != m.state.resourceVersion {
		m.stale++
		return errStale
	}
	return m.store(s)
}

func (m *memSecrets) store(s *certState) error {
	m.version++
	c := *s
	c.resourceVersion = string(rune('a' + m.version))
	m.state = &c
	m.writes++
	return nil
}

const svcHost = "hooks.ops.svc"

func testKeeper(t *testing.T, store secretStore, clk *clocktesting.FakeClock, cfg config.CertRotation) *keeper {
	t.Helper()
	policy, err := newRotation(cfg)
	if err != nil {
		t.Fatal(err)
	}
	policy.hosts, policy.need = []string{svcHost}, []string{svcHost}
	return &keeper{store: store, policy: policy, clock: clk, logger: slog.New(slog.DiscardHandler)}
}

// trusted checks the served certificate against the bundle the API server
// has (the one last published), as the API server checks it at a call.
func trusted(sv served, bundle []byte, now time.Time) error {
	leaf, err := x509.ParseCertificate(sv.cert.Certificate[0])
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(bundle)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, DNSName: svcHost})
	return err
}

func countPEM(bundle []byte) int { return strings.Count(string(bundle), "BEGIN CERTIFICATE") }

// Two replicas rotate the certificates of one Secret over several
// lifetimes, each syncing when its keeper says; after every step the
// certificate each one serves is trusted by the CA bundle the API server
// has: the last one published at least 40 seconds ago (the configuration's
// patch and the API server's informer take time). No call is rejected. The bundle holds two
// CAs during each overlap and one after it.
func TestRotationNeverServesAnUntrustedCertificate(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	store := &memSecrets{}
	cfg := config.CertRotation{Validity: time.Hour, RenewBefore: 20 * time.Minute, CheckInterval: time.Minute}
	type replica struct {
		k    *keeper
		at   time.Time
		sv   served
		seen map[string]bool
	}
	const lag = 40 * time.Second
	type publication struct {
		at     time.Time
		bundle []byte
	}
	var apiBundle []byte
	var pending []publication
	replicas := []*replica{{k: testKeeper(t, store, clk, cfg)}, {k: testKeeper(t, store, clk, cfg)}}
	// The second replica starts 37 seconds later, off the first's beat.
	replicas[1].at = clk.Now().Add(37 * time.Second)
	cas := map[string]bool{}
	maxBundle, swaps := 0, 0
	for clk.Now().Before(time.Date(2026, 1, 1, 4, 0, 0, 0, time.UTC)) {
		now := clk.Now()
		for i, r := range replicas {
			if now.Before(r.at) {
				continue
			}
			sv, wait, err := r.k.sync(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if wait <= 0 || wait > cfg.CheckInterval {
				t.Fatalf("replica %d waits %s", i, wait)
			}
			// As Server.Run: the bundle is published before the swap.
			if string(sv.bundle) != string(r.sv.bundle) {
				if apiBundle == nil {
					apiBundle = sv.bundle // the first one, before any call
				}
				pending = append(pending, publication{at: now.Add(lag), bundle: sv.bundle})
			}
			if r.sv.cert.Certificate != nil && string(r.sv.cert.Certificate[0]) != string(sv.cert.Certificate[0]) {
				swaps++
			}
			r.sv, r.at = sv, now.Add(wait)
			cas[string(firstPEM(sv.bundle))] = true
			maxBundle = max(maxBundle, countPEM(sv.bundle))
		}
		for len(pending) > 0 && !now.Before(pending[0].at) {
			apiBundle, pending = pending[0].bundle, pending[1:]
		}
		for i, r := range replicas {
			if r.sv.cert.Certificate == nil {
				continue
			}
			if err := trusted(r.sv, apiBundle, now); err != nil {
				t.Fatalf("at %s replica %d serves a certificate the API server rejects: %v", now.Format(time.TimeOnly), i, err)
			}
		}
		next := replicas[0].at
		for _, r := range replicas[1:] {
			if r.at.Before(next) {
				next = r.at
			}
		}
		if len(pending) > 0 && pending[0].at.Before(next) {
			next = pending[0].at
		}
		clk.SetTime(next)
	}
	if len(cas) < 4 {
		t.Errorf("%d CAs in 4 hours of 1-hour certificates, want at least 4 (rotations)", len(cas))
	}
	if maxBundle != 2 || countPEM(apiBundle) > 2 {
		t.Errorf("bundles held at most %d CAs (want 2 during overlaps), now %d", maxBundle, countPEM(apiBundle))
	}
	if swaps < 6 {
		t.Errorf("%d certificate swaps by 2 replicas over 3 rotations", swaps)
	}
}

// Replicas starting together, both finding no Secret, end up serving from
// the one that was created first: one CA, the loser's write dropped.
func TestReplicasStartingTogetherAgreeOnOneCA(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var gets sync.WaitGroup
	gets.Add(2) // both first reads happen before either writes
	store := &memSecrets{gets: &gets, hold: 2}
	cfg := config.CertRotation{}
	a, b := testKeeper(t, store, clk, cfg), testKeeper(t, store, clk, cfg)
	var wg sync.WaitGroup
	results := make([]served, 2)
	errs := make([]error, 2)
	for i, k := range []*keeper{a, b} {
		wg.Go(func() {
			results[i], _, errs[i] = k.sync(context.Background())
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if store.writes != 1 || store.stale != 1 {
		t.Errorf("writes %d, stale %d; want 1 and 1", store.writes, store.stale)
	}
	if string(results[0].bundle) != string(results[1].bundle) || countPEM(results[0].bundle) != 1 {
		t.Fatalf("the replicas disagree on the CA bundle")
	}
	for i, r := range results {
		if err := trusted(r, results[0].bundle, clk.Now()); err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
}

// A certificate that cannot serve (expired while the operator was down,
// or for other hosts after the Service was renamed) is replaced at once,
// without an overlap; a due one is rotated with one.
func TestAdvanceReplacesUnusableCertificatesAtOnce(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	policy, err := newRotation(config.CertRotation{Validity: time.Hour, CheckInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	policy.hosts, policy.need = []string{svcHost, "10.0.0.1"}, []string{svcHost}
	first, _, err := policy.advance(nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, changed, _ := policy.advance(first, now.Add(30*time.Minute)); changed {
		t.Error("a fresh certificate changed before it was due")
	}
	due, changed, _ := policy.advance(first, now.Add(45*time.Minute))
	if !changed || due.Next == nil || countPEM(due.Bundle) != 2 || !due.NextAt.Equal(now.Add(47*time.Minute)) || !due.RetireAt.After(now.Add(59*time.Minute)) {
		t.Errorf("due: changed %v, next %v at %s, %d CAs, retire at %s", changed, due.Next != nil, due.NextAt, countPEM(due.Bundle), due.RetireAt)
	}
	expired, changed, _ := policy.advance(first, now.Add(2*time.Hour))
	if !changed || expired.Next != nil || countPEM(expired.Bundle) != 1 || string(expired.Bundle) == string(first.Bundle) {
		t.Error("an expired certificate is not replaced at once")
	}
	// Another replica, with an address of its own, keeps the certificate.
	policy.hosts = []string{svcHost, "10.0.0.2"}
	if _, changed, _ := policy.advance(first, now.Add(time.Minute)); changed {
		t.Error("a replica with another address replaced the shared certificate")
	}
	policy.hosts, policy.need = []string{"renamed.ops.svc"}, []string{"renamed.ops.svc"}
	renamed, changed, _ := policy.advance(first, now.Add(time.Minute))
	if !changed || renamed.Next != nil || string(renamed.Bundle) == string(first.Bundle) {
		t.Error("a certificate for other hosts is not replaced at once")
	}
	if _, err := newRotation(config.CertRotation{Validity: time.Hour, RenewBefore: time.Minute, CheckInterval: time.Minute}); err == nil {
		t.Error("RenewBefore within 2×CheckInterval is accepted")
	}
}

// Through a Service, the webhooks' clientConfig names it, with the
// handler id as the path's last segment.
func TestBuildWebhooksThroughAService(t *testing.T) {
	hs := []*handling.AdmissionHandler{handler(t, handlers.Validating, "check/x", nil2, nil)}
	cc := ClientConfig{URL: "https://ignored", Path: "/hooks/", Service: &config.WebhookService{Name: "hooks", Namespace: "ops"}, CABundle: []byte("CA")}
	got := BuildWebhooks(hs, handlers.Validating, []resources.Resource{kex}, "", cc, false)
	data, _ := json.Marshal(got[0].(map[string]any)["clientConfig"])
	if want := `{"caBundle":"Q0E=","service":{"name":"hooks","namespace":"ops","path":"/hooks/check%2Fx","port":443}}`; string(data) != want {
		t.Errorf("clientConfig = %s, want %s", data, want)
	}
}
