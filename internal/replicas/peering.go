package replicas

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/pyrepr"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/patch"
)

// The peering resources (Kopf's, in kopf.dev).
var (
	ClusterPeerings = resources.Resource{Group: "kopf.dev", Version: "v1", Plural: "clusterkopfpeerings", Kind: "ClusterKopfPeering"}
	Peerings        = resources.Resource{Group: "kopf.dev", Version: "v1", Plural: "kopfpeerings", Kind: "KopfPeering", Namespaced: true}
)

// PeeringConfig is one operator's membership in one peering object.
type PeeringConfig struct {
	Client *kube.Client
	// Resource is Peerings (Namespace set) or ClusterPeerings.
	Resource  resources.Resource
	Namespace string
	Name      string
	Identity  string
	Priority  int
	Lifetime  time.Duration
	// Stealth keeps the keep-alives out of the logs.
	Stealth bool
	// Mandatory: the operator stands by until the peering object says it
	// may serve (Kopf's mandatory peering starts paused).
	Mandatory bool
	Logger    *slog.Logger
	Pause     *Standby
	Clock     clock.WithTicker
}

// Reason is what the operator holds in the Standby while this peering
// makes it stand by: Kopf's toggle name, "name@namespace" ("@None" when
// cluster-wide).
func (c PeeringConfig) Reason() string {
	ns := "None"
	if c.Namespace != "" {
		ns = c.Namespace
	}
	return c.Name + "@" + ns
}

func (c PeeringConfig) where() string {
	if c.Namespace != "" {
		return "in " + pyrepr.Repr(c.Namespace)
	}
	return "cluster-wide"
}

// Run keeps the operator's record alive and follows the peers until ctx
// ends, then removes the record. Cancel ctx only once the reactor has
// stopped, so that the peers wait for the handlers still running here.
func RunPeering(ctx context.Context, c PeeringConfig) {
	if c.Lifetime <= 0 {
		c.Lifetime = DefaultLifetime
	}
	// The operator stands by until it has seen the peering object once:
	// otherwise a replica of lower priority would serve for a moment at
	// its start. Without the object, optional peering lets it serve, and
	// mandatory peering keeps it standing by (as Kopf's does).
	p := &peer{PeeringConfig: c, news: make(chan struct{}, 1), paused: true}
	c.Pause.Pause(c.Reason())
	var wg sync.WaitGroup
	wg.Go(func() { p.keepalive(ctx) })
	wg.Go(func() { p.observe(ctx) })
	wg.Wait()
	// Gone from the peering at once, rather than after the lifetime.
	bye, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	p.touch(bye, true)
}

type peer struct {
	PeeringConfig
	news   chan struct{}
	paused bool
	// announced: the pause was logged (the initial one is not), so the
	// resume is logged too.
	announced bool
	warned    bool // the peering object is missing: said once
	// failing: the last keep-alive failed (and said so). warned and
	// failing belong to keepalive (and to Run's last touch, after it).
	failing bool
}

// keepalive renews the record a few seconds before it expires, with jitter
// (Kopf's schedule: lifetime minus 5 to 10 seconds, at least a second).
func (p *peer) keepalive(ctx context.Context) {
	for {
		p.touch(ctx, false)
		lifetime := int(p.Lifetime / time.Second)
		d := min(lifetime, max(1, lifetime-5-rand.IntN(6)))
		t := p.Clock.NewTimer(time.Duration(max(1, d)) * time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// Touch writes a peer's record into a peering object, or removes it when
// its lifetime is 0 (as Kopf's touch does, which kopf freeze and resume
// use). A missing object is kube.ErrGone.
func Touch(ctx context.Context, client *kube.Client, res resources.Resource, namespace, name string, p Peer) error {
	pt := &patch.Patch{}
	var rec any
	if p.Lifetime > 0 {
		rec = p.Record()
	}
	pt.Set([]string{"status", p.Identity}, rec)
	_, err := client.Apply(ctx, res, namespace, name, pt)
	return err
}

// touch writes the record (or removes it, when leaving).
func (p *peer) touch(ctx context.Context, leaving bool) {
	me := Peer{Identity: p.Identity, Priority: p.Priority, Lifetime: p.Lifetime, LastSeen: p.Clock.Now()}
	if leaving {
		me.Lifetime = 0
	}
	err := Touch(ctx, p.Client, p.Resource, p.Namespace, p.Name, me)
	result := "ok"
	switch {
	case errors.Is(err, kube.ErrGone):
		result = "not found"
		if !p.warned && !leaving {
			p.warned = true
			if p.Mandatory {
				p.Logger.Error(fmt.Sprintf("Peering object %s %s is not found, though peering is mandatory: standing by until it exists (see deploy/peering, or kopfgo manifests --peering).", pyrepr.Repr(p.Name), p.where()))
			} else {
				p.Logger.Warn(fmt.Sprintf("Peering object %s %s is not found, falling back to the standalone mode.", pyrepr.Repr(p.Name), p.where()))
			}
		}
	case err != nil:
		if ctx.Err() == nil {
			// Said once until it works again: a lasting failure (RBAC) is
			// not news every few seconds.
			log := p.Logger.Warn
			if p.failing {
				log = p.Logger.Debug
			}
			log(fmt.Sprintf("Keep-alive in %s %s has failed: %v", pyrepr.Repr(p.Name), p.where(), err))
			p.failing = true
		}
		return
	}
	p.failing = false
	if !p.Stealth || result != "ok" {
		p.Logger.Debug(fmt.Sprintf("Keep-alive in %s %s: %s.", pyrepr.Repr(p.Name), p.where(), result))
	}
}

// observe follows the peering object and judges the peers on every change,
// and again when a blocking peer's record expires.
func (p *peer) observe(ctx context.Context) {
	lw := p.Client.ListWatch(p.Resource, p.Namespace, kube.WatchOptions{Clock: p.Clock})
	informer := cache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, cache.Indexers{})
	poke := func(any) {
		select {
		case p.news <- struct{}{}:
		default:
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: poke, UpdateFunc: func(_, o any) { poke(o) }, DeleteFunc: poke,
	}); err != nil {
		p.Logger.Error(fmt.Sprintf("Cannot follow the peering %s %s: %v", pyrepr.Repr(p.Name), p.where(), err))
		return
	}
	// A peering the operator cannot read (RBAC without the peering
	// objects) must not keep it standing by: optional peering then serves
	// without peers, and tries again in the background, as the informer
	// does.
	failed := make(chan struct{})
	var failOnce sync.Once
	_ = informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, _ *cache.Reflector, err error) {
		if ctx.Err() != nil || informer.HasSynced() {
			return
		}
		failOnce.Do(func() {
			p.Logger.Warn(fmt.Sprintf("Cannot follow the peering %s %s, so its peers are not seen: %v", pyrepr.Repr(p.Name), p.where(), err))
			close(failed)
		})
	})
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { informer.RunWithContext(ctx) })
	if !cache.WaitForCacheSync(ctx.Done(), func() bool {
		select {
		case <-failed:
			if p.paused && !p.announced && !p.Mandatory {
				p.paused = false
				p.Pause.Resume(p.Reason())
			}
		default:
		}
		return informer.HasSynced()
	}) {
		return
	}
	poke(nil)
	key := p.Name
	if p.Namespace != "" {
		key = p.Namespace + "/" + p.Name
	}
	var again clock.Timer
	defer func() {
		if again != nil {
			again.Stop()
		}
	}()
	for {
		var expiry <-chan time.Time
		if again != nil {
			expiry = again.C()
		}
		select {
		case <-ctx.Done():
			return
		case <-p.news:
		case <-expiry:
		}
		if again != nil {
			again.Stop()
			again = nil
		}
		obj, exists, _ := informer.GetStore().GetByKey(key)
		u, _ := obj.(*unstructured.Unstructured)
		if !exists || u == nil {
			if p.paused && !p.Mandatory {
				p.paused = false
				p.Pause.Resume(p.Reason())
			}
			continue
		}
		if next := p.judge(ctx, u); next > 0 {
			again = p.Clock.NewTimer(next)
		}
	}
}

// judge decides on the peers of the peering object, and returns when to
// look again (0: only on news).
func (p *peer) judge(ctx context.Context, u *unstructured.Unstructured) time.Duration {
	status, _ := u.Object["status"].(map[string]any)
	now := p.Clock.Now()
	peers, errs := Peers(status, now)
	for _, err := range errs {
		p.Logger.Warn(fmt.Sprintf("Peering %s %s: %v", pyrepr.Repr(p.Name), p.where(), err))
	}
	v := Survey(peers, p.Identity, p.Priority, now)
	if len(v.Dead) > 0 {
		pt := &patch.Patch{}
		for _, d := range v.Dead {
			pt.Set([]string{"status", d.Identity}, nil)
		}
		if _, err := p.Client.Apply(ctx, p.Resource, p.Namespace, p.Name, pt); err != nil && !errors.Is(err, kube.ErrGone) && ctx.Err() == nil {
			p.Logger.Warn(fmt.Sprintf("Cannot remove the dead peers from %s %s: %v", pyrepr.Repr(p.Name), p.where(), err))
		}
	}
	switch {
	case len(v.Higher) > 0:
		if !p.announced {
			p.Logger.Info(fmt.Sprintf("Pausing operations in favour of %s.", reprList(v.Higher)))
			p.paused, p.announced = true, true
			p.Pause.Pause(p.Reason())
		}
	case len(v.Same) > 0:
		p.Logger.Warn(fmt.Sprintf("Possibly conflicting operators with the same priority: %s.", reprList(v.Same)))
		if !p.announced {
			p.Logger.Warn(fmt.Sprintf("Pausing all operators, including self: %s", reprList(peers)))
			p.paused, p.announced = true, true
			p.Pause.Pause(p.Reason())
		}
	default:
		if p.paused {
			if p.announced {
				p.Logger.Info("Resuming operations after the pause. Conflicting operators with the same priority are gone.")
			}
			p.paused, p.announced = false, false
			p.Pause.Resume(p.Reason())
		}
	}
	var next time.Duration
	for _, b := range v.Blocking {
		if d := b.Deadline().Sub(now); next == 0 || d < next {
			next = d
		}
	}
	if len(v.Blocking) > 0 && next <= 0 {
		next = time.Millisecond
	}
	return next
}
