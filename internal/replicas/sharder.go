package replicas

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/kopfgo/kopfgo/internal/conventions"
)

// ShardingReason is what a replica holds in the Standby while it hands shards
// over, and while it holds none.
const ShardingReason = "sharding"

// ShardingLabel is the label of every Lease of an operator's sharding (shards and
// members), valued with the operator's name: one list reads them all.
const ShardingLabel = "kopfgo.dev/sharding"

// ShardingConfig is one replica's part in an operator's sharding.
type ShardingConfig struct {
	// Leases is kube.Client.Leases: the operator's own client.
	Leases    coordinationv1.LeasesGetter
	Namespace string
	// Name is the operator's name: the shards' Leases are
	// "<Name>-shard-<i>", the members' "<Name>-member-<hash>".
	Name string
	// Shards is the number of shards (at least 1).
	Shards int
	// Identity is this replica's name in the Leases' holderIdentity.
	Identity string
	// Zero durations are the defaults: 15s, 10s, 2s.
	Timing
	Clock  clock.WithTicker
	Logger *slog.Logger
	// Pause is the operator's: the replica holds ShardingReason in it while
	// it holds no shard.
	Pause *Standby
	// Held, if set, is told the shards held after every change.
	Held func(shards []int)
}

// WithDefaults fills the zero durations and the clock.
func (c ShardingConfig) WithDefaults() ShardingConfig {
	c.Timing = c.Timing.WithDefaults()
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return c
}

// Validate tells what is wrong with the configuration, naming the options.
func (c ShardingConfig) Validate() error {
	var errs []error
	if c.Shards < 1 {
		errs = append(errs, fmt.Errorf("the number of shards (%d) must be at least 1: set Sharding.Shards (--shards)", c.Shards))
	}
	if c.Name == "" {
		errs = append(errs, errors.New("the operator's name is empty: set Sharding.Name (--shards-name)"))
	} else if msgs := validation.IsQualifiedName(conventions.ShardLabel(c.Name)); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("the operator's name %q cannot name the objects' shard label %s: %s; set Sharding.Name (--shards-name) to at most 63 letters, digits, '-', '_' or '.'", c.Name, conventions.ShardLabel(c.Name), strings.Join(msgs, "; ")))
	}
	if c.Namespace == "" {
		errs = append(errs, errors.New("the Leases' namespace is unknown: set Sharding.Namespace (--shards-namespace)"))
	}
	errs = append(errs, c.Timing.Validate(0))
	return errors.Join(errs...)
}

// ShardLease is the name of shard i's Lease.
func ShardLease(name string, i int) string { return name + "-shard-" + strconv.Itoa(i) }

// MemberLease is the name of a replica's membership Lease: the identity
// may hold characters a name may not, so it is hashed (FNV-1a, 32 bits).
func MemberLease(name, identity string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(identity))
	return fmt.Sprintf("%s-member-%08x", name, h.Sum32())
}

// Sharder is one replica's part in the sharding: it holds the Leases of its
// shards and tells the reactor which objects are its own (Owns).
type Sharder struct {
	cfg ShardingConfig
	// serving are the shards whose objects the reactor serves: only
	// shards whose Leases are held.
	serving *Serving

	mu sync.Mutex // the fields below, used by Run's goroutine and read by Held
	// held are the shards' Leases this replica holds, as last written.
	held map[int]*held
	// member is this replica's membership Lease, as last written.
	member *coordv1.Lease
	// seen is when each Lease was last renewed, on this replica's clock:
	// as with client-go's leader election, a Lease expires a lease
	// duration after it was last seen to change, but dated by its
	// renewTime where that falls between the list that saw it change and
	// the one before (renewedAt), so that the expiry does not wait for
	// when this replica happened to look.
	seen map[string]sighting
	// listSent is when the last list of the Leases was sent.
	listSent time.Time
}

type held struct {
	lease   *coordv1.Lease
	renewed time.Time // the last successful write, on our clock
}

type sighting struct {
	holder, renewed string
	at              time.Time     // renewed then, on our clock
	duration        time.Duration // the Lease's own
}

// New makes a replica's sharder; it holds no shard until Run acquires some.
func NewSharder(cfg ShardingConfig) *Sharder {
	return &Sharder{cfg: cfg.WithDefaults(), held: map[int]*held{}, seen: map[string]sighting{},
		serving: NewServing(shardSet(cfg.Name, cfg.Shards, nil))}
}

// Serving are the shards whose objects the reactor serves
// (reactor.Config.Shards), which it follows shard by shard.
func (s *Sharder) Serving() *Serving { return s.serving }

// Set are the shards whose objects the reactor serves now.
func (s *Sharder) Set() ShardSet { return s.serving.Set() }

// Run balances the shards every retry period until ctx ends, then releases
// the Leases held and leaves: cancel ctx only once the reactor has stopped.
// The replica stands by (ShardingReason held) until it holds a shard.
func (s *Sharder) Run(ctx context.Context) error {
	if err := s.cfg.Validate(); err != nil {
		return fmt.Errorf("sharding: %w", err)
	}
	s.cfg.Pause.Pause(ShardingReason)
	s.cfg.Logger.Info(fmt.Sprintf("Sharding the objects into %d shards (leases %s/%s..%d) as %s.", s.cfg.Shards, s.cfg.Namespace, ShardLease(s.cfg.Name, 0), s.cfg.Shards-1, s.cfg.Identity))
	ticker := s.cfg.Clock.NewTicker(s.cfg.RetryPeriod)
	defer ticker.Stop()
	for {
		s.step(ctx, ticker.C())
		// A round at the moment another replica's Lease expires, not at
		// the next tick after it: a dead replica's shards are taken a
		// lease duration after its last renewal, not up to a retry period
		// later.
		var expiry clock.Timer
		var expired <-chan time.Time
		if at, ok := s.nextExpiry(); ok {
			expiry = s.cfg.Clock.NewTimer(at.Sub(s.cfg.Clock.Now()))
			expired = expiry.C()
		}
		select {
		case <-ctx.Done():
		case <-ticker.C():
		case <-expired:
		}
		if expiry != nil {
			expiry.Stop()
		}
		if ctx.Err() != nil {
			s.leave(context.WithoutCancel(ctx))
			return nil
		}
	}
}

// step is one round: read the Leases, renew ours, balance, hand over.
func (s *Sharder) step(ctx context.Context, ticks <-chan time.Time) {
	// The round's requests end within half the renew deadline, so that a
	// hanging API server cannot keep a replica serving shards whose Leases
	// it no longer renews.
	rctx, cancel := s.bounded(ctx)
	defer cancel()
	lost, plan, acquired := s.round(rctx)
	if len(lost) > 0 || len(plan.Release) > 0 || len(acquired) > 0 {
		s.handover(ctx, ticks, lost, plan.Release, acquired)
	}
}

// bounded is ctx for one round's requests: at most half the renew deadline.
func (s *Sharder) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.cfg.RenewDeadline/2)
}

// round reads the Leases, renews ours, balances and acquires. If the
// Leases cannot be read, only the lost shards count.
func (s *Sharder) round(ctx context.Context) (lost []int, plan ShardPlan, acquired []int) {
	leases, err := s.list(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.cfg.Logger.Warn(fmt.Sprintf("Cannot read the sharding's leases, retrying: %v", err))
		}
	}
	s.join(ctx, leases)
	lost = s.renew(ctx)
	if err != nil {
		return lost, plan, nil
	}
	now := s.cfg.Clock.Now()
	view := ShardView{Shards: s.cfg.Shards, Me: s.cfg.Identity, Holders: make([]string, s.cfg.Shards)}
	s.mu.Lock()
	for _, l := range leases {
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		live := holder != "" && !s.expired(l, now)
		if i, ok := s.shardOf(l.Name); ok {
			if _, mine := s.held[i]; mine && !slices.Contains(lost, i) {
				view.Holders[i] = s.cfg.Identity
			} else if live && holder != s.cfg.Identity {
				view.Holders[i] = holder
			}
			continue
		}
		if live {
			view.Members = append(view.Members, holder)
		} else if holder != s.cfg.Identity && now.Sub(s.seen[l.Name].at) > 2*s.cfg.LeaseDuration {
			// A replica gone without leaving: its membership is garbage.
			_ = s.cfg.Leases.Leases(s.cfg.Namespace).Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &l.ResourceVersion}})
		}
	}
	byName := map[string]*coordv1.Lease{}
	for i := range leases {
		byName[leases[i].Name] = &leases[i]
	}
	s.mu.Unlock()
	plan = Balance(view)
	for _, i := range plan.Acquire {
		if s.acquire(ctx, i, byName[ShardLease(s.cfg.Name, i)]) {
			acquired = append(acquired, i)
		}
	}
	return lost, plan, acquired
}

// handover changes the shards served, in the order that fences them
// (doc.go): the shards acquired are already held, and are served at once;
// the lost and released shards stop being served at once, and the reactor
// reports when they have halted (handlers finish, daemons and timers
// return) while the Leases are renewed; only then are the released
// shards' Leases released. The shards kept are served throughout. The
// replica stands by while it holds no shard.
func (s *Sharder) handover(ctx context.Context, ticks <-chan time.Time, lost, release, acquired []int) {
	s.drop(lost)
	// Before the reactor resumes, so that it starts with the new set.
	s.serving.Serve(s.kept(release))
	if len(acquired) > 0 {
		s.cfg.Pause.Resume(ShardingReason)
	}
	for _, i := range acquired {
		s.cfg.Logger.Info(fmt.Sprintf("Acquired shard %d of %d (lease %s); serving its objects.", i, s.cfg.Shards, ShardLease(s.cfg.Name, i)))
	}
	if err := s.serving.WaitHalted(ctx, ticks, func() {
		rctx, cancel := s.bounded(ctx)
		defer cancel()
		if more := s.renew(rctx); len(more) > 0 {
			s.drop(more)
			s.serving.Serve(s.kept(release))
		}
	}); err != nil {
		return // the operator stops: leave releases everything after the reactor has stopped
	}
	rctx, cancel := s.bounded(ctx)
	defer cancel()
	for _, i := range release {
		if !s.release(rctx, i) {
			continue
		}
		s.cfg.Logger.Info(fmt.Sprintf("Released shard %d of %d (lease %s) to rebalance; its objects are stopped here.", i, s.cfg.Shards, ShardLease(s.cfg.Name, i)))
	}
	held := s.Held()
	if s.cfg.Held != nil {
		s.cfg.Held(held)
	}
	if len(held) == 0 {
		s.cfg.Pause.Pause(ShardingReason)
	}
}

// drop forgets the lost shards: their work stops at once, and their Leases
// are another replica's to take once expired.
func (s *Sharder) drop(lost []int) {
	s.mu.Lock()
	for _, i := range lost {
		delete(s.held, i)
	}
	s.mu.Unlock()
	for _, i := range lost {
		s.cfg.Logger.Warn(fmt.Sprintf("Lost shard %d of %d: its lease %s was not renewed in time; its objects are left to other replicas.", i, s.cfg.Shards, ShardLease(s.cfg.Name, i)))
	}
}

// kept are the shards held but those to release: the shards to serve.
func (s *Sharder) kept(release []int) []int {
	return slices.DeleteFunc(s.Held(), func(i int) bool { return slices.Contains(release, i) })
}

// Held are the shards whose Leases this replica holds, sorted.
func (s *Sharder) Held() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.held))
}

// shardOf parses a shard's Lease name.
func (s *Sharder) shardOf(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, s.cfg.Name+"-shard-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil && i >= 0 && i < s.cfg.Shards
}

// list reads the sharding's Leases and notes when each changed. The
// caller does not hold s.mu.
func (s *Sharder) list(ctx context.Context) ([]coordv1.Lease, error) {
	sent := s.cfg.Clock.Now()
	list, err := s.cfg.Leases.Leases(s.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: ShardingLabel + "=" + s.cfg.Name})
	if err != nil {
		return nil, err
	}
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	// A Lease changed since the last list was written after that list
	// was sent (before the first list, renewedAt's margin bounds it).
	since := s.listSent
	s.listSent = sent
	listed := map[string]bool{}
	for _, l := range list.Items {
		s.sightBetween(&l, since, now)
		listed[l.Name] = true
	}
	maps.DeleteFunc(s.seen, func(name string, _ sighting) bool { return !listed[name] }) // deleted Leases
	return list.Items, nil
}

// sight notes a Lease as written now. The caller holds s.mu.
func (s *Sharder) sight(l *coordv1.Lease, now time.Time) { s.sightBetween(l, now, now) }

// sightBetween notes a Lease read at now, which if it changed since it
// was last seen was written after since. The caller holds s.mu.
func (s *Sharder) sightBetween(l *coordv1.Lease, since, now time.Time) {
	sg := sighting{holder: ptr.Deref(l.Spec.HolderIdentity, ""), duration: time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second}
	var renewTime time.Time
	if l.Spec.RenewTime != nil {
		renewTime = l.Spec.RenewTime.Time
		sg.renewed = l.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
	}
	if old, ok := s.seen[l.Name]; ok && old.holder == sg.holder && old.renewed == sg.renewed {
		return
	}
	sg.at = renewedAt(renewTime, since, now, (s.cfg.LeaseDuration-s.cfg.RenewDeadline)/2)
	s.seen[l.Name] = sg
}

// renewedAt is when, on this replica's clock, a Lease seen to change at now
// and not before since was renewed, given the renewTime its holder wrote.
// Where the clocks agree that is the renewTime itself, so that a dead
// replica's Lease expires a lease duration after its last renewal rather
// than after this replica happened to see it; a renewTime outside
// [since, now] is a clock that disagrees, and its nearest end is taken.
// Never earlier than margin before now: a holder whose clock lags far
// behind, seen for the first time, is given its Lease until at least a
// lease duration minus margin from now, while it gives it up after its
// renew deadline, margin being half the difference.
func renewedAt(renewTime, since, now time.Time, margin time.Duration) time.Time {
	since = later(since, now.Add(-margin))
	switch {
	case renewTime.Before(since):
		return since
	case renewTime.After(now):
		return now
	}
	return renewTime
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// nextExpiry is when the next Lease held by another replica expires, if
// one is held and not expired yet: one that has expired (a dead replica's
// membership until it is deleted, a shard another replica is to take) is
// the rounds' business, not a reason to wake.
func (s *Sharder) nextExpiry() (time.Time, bool) {
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var next time.Time
	for _, sg := range s.seen {
		if sg.holder == "" || sg.holder == s.cfg.Identity || sg.duration <= 0 {
			continue
		}
		if at := sg.at.Add(sg.duration); at.After(now) && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next, !next.IsZero()
}

// expired: the Lease has not been renewed for its duration. The caller
// holds s.mu.
func (s *Sharder) expired(l coordv1.Lease, now time.Time) bool {
	sg := s.seen[l.Name]
	return !now.Before(sg.at.Add(sg.duration))
}

// spec is a Lease's spec held by this replica from now.
func (s *Sharder) spec(now time.Time, spec coordv1.LeaseSpec) coordv1.LeaseSpec {
	t := metav1.NewMicroTime(now)
	if ptr.Deref(spec.HolderIdentity, "") != s.cfg.Identity {
		spec.AcquireTime = &t
		if spec.HolderIdentity != nil && *spec.HolderIdentity != "" {
			spec.LeaseTransitions = ptr.To(ptr.Deref(spec.LeaseTransitions, 0) + 1)
		}
	}
	spec.HolderIdentity = ptr.To(s.cfg.Identity)
	spec.LeaseDurationSeconds = ptr.To(int32(s.cfg.LeaseDuration / time.Second))
	spec.RenewTime = &t
	return spec
}

func (s *Sharder) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: s.cfg.Namespace, Labels: map[string]string{ShardingLabel: s.cfg.Name}}
}

// join creates or renews this replica's membership Lease.
func (s *Sharder) join(ctx context.Context, leases []coordv1.Lease) {
	api := s.cfg.Leases.Leases(s.cfg.Namespace)
	name := MemberLease(s.cfg.Name, s.cfg.Identity)
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	member := s.member
	s.mu.Unlock()
	if member == nil {
		for i := range leases {
			if leases[i].Name == name {
				member = &leases[i]
			}
		}
	}
	var err error
	if member == nil {
		member, err = api.Create(ctx, &coordv1.Lease{ObjectMeta: s.meta(name), Spec: s.spec(now, coordv1.LeaseSpec{})}, metav1.CreateOptions{})
	} else {
		l := member.DeepCopy()
		l.Spec = s.spec(now, l.Spec)
		member, err = api.Update(ctx, l, metav1.UpdateOptions{})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.member = nil // read it afresh next time
		if ctx.Err() == nil {
			s.cfg.Logger.Debug(fmt.Sprintf("Cannot renew the membership lease %s: %v", name, err))
		}
		return
	}
	s.member = member
	s.sight(member, now)
}

// renew renews the Leases of the shards held, and returns those not
// renewed within the renew deadline: lost, their work must stop at once.
func (s *Sharder) renew(ctx context.Context) (lost []int) {
	api := s.cfg.Leases.Leases(s.cfg.Namespace)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, i := range slices.Sorted(maps.Keys(s.held)) {
		h := s.held[i]
		now := s.cfg.Clock.Now()
		l := h.lease.DeepCopy()
		l.Spec = s.spec(now, l.Spec)
		got, err := api.Update(ctx, l, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			// Changed meanwhile: ours still, or taken.
			if cur, gerr := api.Get(ctx, l.Name, metav1.GetOptions{}); gerr == nil && ptr.Deref(cur.Spec.HolderIdentity, "") == s.cfg.Identity {
				cur.Spec = s.spec(now, cur.Spec)
				got, err = api.Update(ctx, cur, metav1.UpdateOptions{})
			} else if gerr == nil {
				lost = append(lost, i)
				continue
			}
		}
		if err == nil {
			h.lease, h.renewed = got, now
			s.sight(got, now)
			continue
		}
		if now.Sub(h.renewed) >= s.cfg.RenewDeadline {
			lost = append(lost, i)
		} else if ctx.Err() == nil {
			s.cfg.Logger.Debug(fmt.Sprintf("Cannot renew the lease %s, retrying: %v", l.Name, err))
		}
	}
	return lost
}

// acquire takes shard i's Lease if it is free (l: as listed, nil if it
// does not exist); false if another replica was faster.
func (s *Sharder) acquire(ctx context.Context, i int, l *coordv1.Lease) bool {
	api := s.cfg.Leases.Leases(s.cfg.Namespace)
	now := s.cfg.Clock.Now()
	var got *coordv1.Lease
	var err error
	if l == nil {
		got, err = api.Create(ctx, &coordv1.Lease{ObjectMeta: s.meta(ShardLease(s.cfg.Name, i)), Spec: s.spec(now, coordv1.LeaseSpec{})}, metav1.CreateOptions{})
	} else {
		// The resourceVersion read is the fence: if another replica has
		// written the Lease since, the update conflicts.
		l = l.DeepCopy()
		l.Spec = s.spec(now, l.Spec)
		got, err = api.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
			s.cfg.Logger.Warn(fmt.Sprintf("Cannot acquire the lease %s: %v", ShardLease(s.cfg.Name, i), err))
		}
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held[i] = &held{lease: got, renewed: now}
	s.sight(got, now)
	return true
}

// release gives shard i's Lease up as client-go's leader election does: no
// holder, a duration of one second. Its work must have stopped. False if
// it was not held.
func (s *Sharder) release(ctx context.Context, i int) bool {
	s.mu.Lock()
	h := s.held[i]
	delete(s.held, i)
	s.mu.Unlock()
	if h == nil {
		return false
	}
	l := h.lease.DeepCopy()
	now := metav1.NewMicroTime(s.cfg.Clock.Now())
	l.Spec.HolderIdentity = ptr.To("")
	l.Spec.LeaseDurationSeconds = ptr.To(int32(1))
	l.Spec.RenewTime, l.Spec.AcquireTime = &now, &now
	if _, err := s.cfg.Leases.Leases(s.cfg.Namespace).Update(ctx, l, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
		// It expires by itself in a lease duration.
		s.cfg.Logger.Warn(fmt.Sprintf("Cannot release the lease %s; it expires by itself: %v", l.Name, err))
	}
	return true
}

// leave releases every shard held and deletes the membership Lease; the
// reactor has stopped. It gives up after a renew deadline.
func (s *Sharder) leave(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RenewDeadline)
	defer cancel()
	s.cfg.Pause.Pause(ShardingReason)
	held := s.Held()
	for _, i := range held {
		s.release(ctx, i)
	}
	s.serving.Serve(nil)
	if len(held) > 0 {
		s.cfg.Logger.Info(fmt.Sprintf("Released the shards %s on exit.", ints(held)))
	}
	if s.cfg.Held != nil {
		s.cfg.Held(nil)
	}
	s.mu.Lock()
	member := s.member
	s.mu.Unlock()
	if member != nil {
		_ = s.cfg.Leases.Leases(s.cfg.Namespace).Delete(ctx, member.Name, metav1.DeleteOptions{})
	}
}

func ints(xs []int) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.Itoa(x)
	}
	return strings.Join(out, ", ")
}
