package admission

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/patch"
)

// Config is what Run needs.
type Config struct {
	Handlers []*handling.AdmissionHandler
	Settings config.Admission
	// Client makes the API calls: discovery and the managed configurations.
	Client *kube.Client
	Logger *slog.Logger
	Memo   *handlers.Memo
	// Server overrides the server built from Settings.Server (tests set
	// its Listener).
	Server *Server
	// Namespace is the operator's own (the pod's): that of the
	// certificates' Secret unless CertSecret or the Service names one.
	Namespace string
	// Clock times the certificates' rotation and the answers; nil: the
	// real clock.
	Clock clock.Clock
	// Observe, when set, is told of every request (Engine.Observe).
	Observe func(webhook string, status int, d time.Duration)
}

// ErrNoServer is Kopf's start failure for admission handlers without a
// webhook server.
var ErrNoServer = errors.New("admission handlers exist, but no admission server is configured in Settings.Admission.Server")

// Run serves the admission handlers until ctx ends, and manages the webhook
// configurations if Settings.Managed names them: created at start, patched
// with the webhooks whenever the server's client config changes, and left
// with only the persistent webhooks when ctx ends (compat:
// admission-managed). It owns its goroutines.
func Run(ctx context.Context, cfg Config) error {
	if len(cfg.Handlers) == 0 {
		return nil
	}
	if cfg.Settings.Server == nil && cfg.Server == nil {
		return ErrNoServer
	}
	res := &resolver{client: cfg.Client, handlers: cfg.Handlers, logger: cfg.Logger}
	if err := res.refresh(ctx, true); err != nil {
		return err
	}
	srv := cfg.Server
	if srv == nil {
		srv = &Server{Config: *cfg.Settings.Server}
	}
	srv.Logger = cfg.Logger
	srv.GoawayChance = cmp.Or(cfg.Settings.GoawayChance, config.DefaultGoawayChance)
	if svc := cfg.Settings.Service; svc != nil && srv.Service == nil {
		srv.Service = svc
	}
	if srv.Service != nil && cfg.Settings.CertSecret == "" && srv.Config.CertFile == "" {
		// Each replica would generate a CA of its own and patch it into the
		// configurations, and the API server would reject the others.
		cfg.Logger.Warn("Webhooks through a Service with a certificate generated per process: with more than one replica, " +
			"set Settings.Admission.CertSecret (--webhook-secret) so that they share one CA.")
	}
	if cfg.Settings.CertSecret != "" && srv.certs == nil {
		k, err := newKeeper(cfg)
		if err != nil {
			return err
		}
		srv.certs = k
	}
	srv.Handler = &Engine{
		Handlers: cfg.Handlers, Resolve: res.resolve, Logger: cfg.Logger, Memo: cfg.Memo, Root: srv.Config.Path,
		Observe: cfg.Observe, Clock: cfg.Clock,
	}
	configs := make(chan ClientConfig, 1)
	publish := func(cc ClientConfig) {
		select { // the latest config wins
		case <-configs:
		default:
		}
		configs <- cc
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	defer wg.Wait()
	if cfg.Settings.Managed != "" {
		wg.Go(func() {
			if err := manage(ctx, cfg, res, configs); err != nil {
				cancel(err)
			}
		})
	}
	err := srv.Run(ctx, publish)
	if err == nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			err = cause
		}
	}
	return err
}

// newKeeper is the keeper of the certificates in Settings.CertSecret.
func newKeeper(cfg Config) (*keeper, error) {
	policy, err := newRotation(cfg.Settings.Rotation)
	if err != nil {
		return nil, err
	}
	ns, name, found := strings.Cut(cfg.Settings.CertSecret, "/")
	if !found {
		ns, name = cfg.Namespace, cfg.Settings.CertSecret
		if svc := cfg.Settings.Service; svc != nil && svc.Namespace != "" {
			ns = svc.Namespace
		}
	}
	if ns == "" || name == "" {
		return nil, fmt.Errorf("the webhook certificates' Secret %q has no namespace: name it NAMESPACE/NAME in Settings.Admission.CertSecret", cfg.Settings.CertSecret)
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &keeper{store: &kubeSecrets{client: cfg.Client, namespace: ns, name: name}, policy: policy, clock: clk, logger: cfg.Logger}, nil
}

// manage keeps the managed configurations: both are created if absent (as
// Kopf does, whichever kinds have handlers), patched with each new client
// config, and cleaned up to the persistent webhooks at exit.
func manage(ctx context.Context, cfg Config, res *resolver, configs <-chan ClientConfig) error {
	name := cfg.Settings.Managed
	for _, r := range []struct {
		res  resources.Resource
		kind string
	}{{ValidatingConfigs, "ValidatingWebhookConfiguration"}, {MutatingConfigs, "MutatingWebhookConfiguration"}} {
		if err := cfg.Client.CreateEmpty(ctx, r.res, r.kind, name); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("cannot create the %s %s: %w", r.kind, name, err)
		}
	}
	apply := func(ctx context.Context, cc ClientConfig, persistentOnly bool) error {
		served := res.served()
		for _, k := range []struct {
			kind handlers.AdmissionKind
			res  resources.Resource
		}{{handlers.Validating, ValidatingConfigs}, {handlers.Mutating, MutatingConfigs}} {
			// Kopf's lines, one per configuration.
			if persistentOnly {
				cfg.Logger.Info(fmt.Sprintf("Cleaning up the admission webhook %s.", name))
			} else {
				cfg.Logger.Info(fmt.Sprintf("Reconfiguring the %s webhook %s.", k.kind, name))
			}
			var p patch.Patch
			p.Map()["webhooks"] = BuildWebhooks(cfg.Handlers, k.kind, served, name, cc, persistentOnly)
			if _, err := cfg.Client.Apply(ctx, k.res, "", name, &p); err != nil {
				return fmt.Errorf("cannot configure the %s webhooks of %s: %w", k.kind, name, err)
			}
		}
		return nil
	}
	var last *ClientConfig
	// While a handler serves no resource yet (its CRD is not there), the
	// resources are discovered again now and then, and the webhooks get
	// their rules as soon as it appears, as Kopf's do from its CRD watch.
	rescan := time.NewTicker(rescanEvery)
	defer rescan.Stop()
	defer func() {
		if last == nil {
			return
		}
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := apply(cleanup, *last, true); err != nil {
			cfg.Logger.Error(err.Error())
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case cc := <-configs:
			last = &cc
		case <-rescan.C:
			if last == nil || !res.unresolved() {
				continue
			}
			before := len(res.served())
			if err := res.refresh(ctx, false); err != nil || len(res.served()) == before {
				continue
			}
		}
		if err := apply(ctx, *last, false); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// resolver knows the resources the admission handlers serve, from
// discovery; a request for a resource it does not know makes it discover
// again (a CRD created after the start), at most every few seconds.
type resolver struct {
	client   *kube.Client
	handlers []*handling.AdmissionHandler
	logger   *slog.Logger

	mu      sync.Mutex
	all     []resources.Resource
	checked time.Time
}

const rediscoverEvery = 5 * time.Second

// rescanEvery is how often the resources are discovered again while a
// handler serves none.
var rescanEvery = 10 * time.Second

// unresolved reports whether some handler serves no discovered resource.
func (r *resolver) unresolved() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.handlers {
		found := false
		for _, res := range r.all {
			if h.Selector.Matches(res) {
				found = true
				break
			}
		}
		if !found {
			return true
		}
	}
	return false
}

func (r *resolver) refresh(ctx context.Context, first bool) error {
	all, err := r.client.Discover(ctx)
	if all == nil && err != nil {
		return err
	}
	r.mu.Lock()
	r.all, r.checked = all, time.Now()
	r.mu.Unlock()
	if first {
		for _, h := range r.handlers {
			if _, err := h.Selector.Select(all); err != nil {
				r.logger.Warn(fmt.Sprintf("Admission handler %q serves no resource yet: %v", h.ID, err))
			}
		}
	}
	return nil
}

// served are the discovered resources some admission handler selects.
func (r *resolver) served() []resources.Resource {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []resources.Resource
	for _, res := range r.all {
		for _, h := range r.handlers {
			if h.Selector.Matches(res) {
				out = append(out, res)
				break
			}
		}
	}
	return out
}

func (r *resolver) lookup(group, version, plural string) (resources.Resource, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, res := range r.all {
		if res.Group == group && res.Version == version && res.Plural == plural {
			// Only a resource some handler serves is known: Kopf answers 404
			// for any other.
			for _, h := range r.handlers {
				if h.Selector.Matches(res) {
					return res, true
				}
			}
			return resources.Resource{}, false
		}
	}
	return resources.Resource{}, false
}

func (r *resolver) resolve(group, version, plural string) (resources.Resource, bool) {
	if res, ok := r.lookup(group, version, plural); ok {
		return res, true
	}
	r.mu.Lock()
	stale := time.Since(r.checked) > rediscoverEvery
	r.mu.Unlock()
	if stale {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.refresh(ctx, false); err != nil {
			r.logger.Warn(fmt.Sprintf("Cannot discover the resources: %v", err))
		}
		return r.lookup(group, version, plural)
	}
	return resources.Resource{}, false
}
