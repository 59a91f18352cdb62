package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/flowcontrol"
	"github.com/kopfgo/kopfgo/internal/resources"
	"github.com/kopfgo/kopfgo/internal/tracing"
	"github.com/kopfgo/kopfgo/patch"
)

// ClientOptions tune the clients NewClient builds.
type ClientOptions struct {
	// RequestTimeout bounds each request except watches; 0: none.
	RequestTimeout time.Duration
	// TrustEnv honours HTTP(S)_PROXY and NO_PROXY, which client-go would
	// otherwise honour silently. Credentials' own ProxyURL or TrustEnv
	// (a Proxy in the config) take precedence.
	TrustEnv bool
	// Flow, when set, holds back every request of the clients (watches
	// excepted): the same gate for all clients of one API server, so that
	// they share its limits and its outages. Nil: no flow control.
	Flow *flowcontrol.Gate
	// Tracer, when set, makes each request made in a traced context (a
	// pass, a handler) a child span; its span includes the wait at Flow's
	// gate, which is part of what the request cost its caller. Watches are
	// never traced. Nil: the transport is not wrapped at all.
	Tracer *tracing.Tracer
}

// Client is the operator's API client: made by NewClient only (tests too,
// over a fake API: kubefake), so that production and tests take one path.
type Client struct {
	// Dynamic gets, creates and updates objects, and writes events.
	Dynamic   dynamic.Interface
	Discovery discovery.DiscoveryInterface
	Retry     Retry
	// raw sends the patches without decoding the responses.
	raw *rawPatcher
	// watching lists and watches, decoding each response once. NewClient
	// makes it use HTTP/1.1, one connection per watch, so that one stalled
	// stream cannot stall the others (HTTP/2 multiplexes all of them, and
	// the operator's patches, over one connection).
	watching *rawWatcher
	// host is the API server's address, to name requests in the log.
	host string
	flow *flowcontrol.Gate
	// kinds caches discovery for ServerSideApply (ssa.go).
	kinds kinds
	// leases is the Leases' typed client (Leases).
	leases coordinationv1.LeasesGetter
}

// Flow is the gate the client's requests pass; nil when there is none
// (flow control disabled, or fake clients in tests), which is safe to use.
func (c *Client) Flow() *flowcontrol.Gate { return c.flow }

// retry is Retry.do with the client's gate.
func (c *Client) retry(ctx context.Context, what func() string, call func() error) error {
	return c.Retry.do(ctx, c.flow, what, call)
}

// NewClient builds clients for cfg. Client-side rate limiting is disabled,
// as in Kopf: the operator's request rate follows the cluster's events, and
// the API server's own priority and fairness protects it.
func NewClient(cfg *rest.Config, opts ClientOptions) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS = -1
	}
	cfg.UserAgent = "kopfgo"
	if cfg.Proxy == nil {
		cfg.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
		if opts.TrustEnv {
			cfg.Proxy = environmentProxy()
		}
	}
	if opts.Flow != nil {
		// One gate for the dynamic, discovery, patching, watching and
		// Leases clients: lists are its reads, watches and Leases pass it
		// ungated (flowcontrol's doc says why).
		cfg.Wrap(opts.Flow.Wrap)
	}
	wcfg := rest.CopyConfig(cfg) // no request timeout: watches are long
	wcfg.NextProtos = []string{"http/1.1"}
	cfg.Timeout = opts.RequestTimeout
	if opts.Tracer != nil {
		cfg.Wrap(opts.Tracer.Transport) // outside the gate: the span has the wait
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot create the Kubernetes client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot create the discovery client: %w", err)
	}
	watching, err := newRawWatcher(wcfg)
	if err != nil {
		return nil, err
	}
	raw, err := newRawPatcher(cfg)
	if err != nil {
		return nil, err
	}
	leases, err := newLeases(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{Dynamic: dyn, Discovery: disc, raw: raw, watching: watching, leases: leases, host: strings.TrimSuffix(cfg.Host, "/"), flow: opts.Flow}, nil
}

// Discover lists every served resource of every version, marking the
// preferred versions. Groups whose discovery fails (a broken aggregated API,
// for instance) are skipped, so that they cannot block the whole operator;
// the error is returned alongside for logging.
func (c *Client) Discover(ctx context.Context) ([]resources.Resource, error) {
	// Discovery is the operator's first request: with the API server not
	// (yet) reachable, it is retried with the error backoffs, as Kopf
	// retries every request, instead of failing the start at once.
	var (
		groups  []*metav1.APIGroup
		lists   []*metav1.APIResourceList
		partial *discovery.ErrGroupDiscoveryFailed
	)
	err := c.retry(ctx, func() string { return "GET " + c.host + "/apis" }, func() (err error) {
		groups, lists, err = c.Discovery.ServerGroupsAndResources()
		if errors.As(err, &partial) {
			return nil // some groups only: served without them
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cannot discover the cluster's resources: %w", err)
	}
	preferred := map[string]string{}
	for _, g := range groups {
		preferred[g.Name] = g.PreferredVersion.Version
	}
	var out []resources.Resource
	for _, list := range lists {
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		subs := map[string][]string{}
		for _, r := range list.APIResources {
			if base, sub, ok := strings.Cut(r.Name, "/"); ok {
				subs[base] = append(subs[base], sub)
			}
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			out = append(out, resources.Resource{
				Group:        gv.Group,
				Version:      gv.Version,
				Plural:       r.Name,
				Singular:     r.SingularName,
				Kind:         r.Kind,
				ShortNames:   slices.Clone(r.ShortNames),
				Categories:   slices.Clone(r.Categories),
				Namespaced:   r.Namespaced,
				Preferred:    preferred[gv.Group] == gv.Version,
				Subresources: subs[r.Name],
				Verbs:        slices.Clone(r.Verbs),
			})
		}
	}
	if partial != nil {
		return out, partial
	}
	return out, nil
}

// ErrGone means the object no longer exists.
var ErrGone = errors.New("object is gone")

// Apply sends a handling cycle's patch: one merge patch of the object and,
// for resources with a status subresource, one of its status (the API server
// ignores status in main patches there). The status goes first: the main
// patch carries the progress and the diff-base, which say a handler is done,
// so if the operator dies between the two, the handler runs again rather
// than its result being lost. It returns the resourceVersion the last patch
// left; "" when nothing was sent. A vanished object is ErrGone, not a
// failure.
func (c *Client) Apply(ctx context.Context, res resources.Resource, namespace, name string, p *patch.Patch) (string, error) {
	if p.IsEmpty() {
		return "", nil
	}
	var main, status map[string]any
	if res.HasStatus() {
		main, status = p.Split()
	} else {
		main = p.Map()
	}
	last := ""
	for _, part := range []struct {
		body map[string]any
		sub  string
	}{{status, "status"}, {main, ""}} {
		if len(part.body) == 0 {
			continue
		}
		data, err := json.Marshal(part.body)
		if err != nil {
			return "", fmt.Errorf("cannot encode the patch: %w", err)
		}
		var rv string
		err = c.retry(ctx, func() string { return c.describe("PATCH", res, namespace, name, part.sub) }, func() (err error) {
			rv, err = c.raw.patch(ctx, res, namespace, name, data, part.sub)
			return err
		})
		if apierrors.IsNotFound(err) {
			return last, ErrGone
		}
		if err != nil {
			verb := "patch"
			if part.sub != "" {
				verb = verbPatchStatus
			}
			return last, explain(err, verb, res, namespace, name)
		}
		last = rv
	}
	return last, nil
}

// Get reads an object afresh from the API (not from a watch cache).
func (c *Client) Get(ctx context.Context, res resources.Resource, namespace, name string) (*unstructured.Unstructured, error) {
	var obj *unstructured.Unstructured
	err := c.retry(ctx, func() string { return c.describe("GET", res, namespace, name, "") }, func() (err error) {
		obj, err = c.resource(res, namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, ErrGone
	}
	if err != nil {
		return nil, explain(err, "get", res, namespace, name)
	}
	return obj, nil
}

// List reads the objects of a resource in a namespace ("" for all) afresh
// from the API, as the watchers list them (without managedFields).
func (c *Client) List(ctx context.Context, res resources.Resource, namespace string) ([]unstructured.Unstructured, error) {
	src := c.watching.collection(res, namespace)
	src.dropManagedFields = true
	var list *unstructured.UnstructuredList
	err := c.retry(ctx, func() string { return c.describe("GET", res, namespace, "", "") }, func() (err error) {
		list, err = src.List(ctx, metav1.ListOptions{})
		return err
	})
	if err != nil {
		return nil, explain(err, "list", res, namespace, "")
	}
	return list.Items, nil
}

func (c *Client) resource(res resources.Resource, namespace string) dynamic.ResourceInterface {
	ri := c.Dynamic.Resource(res.GVR())
	if res.Namespaced {
		return ri.Namespace(namespace)
	}
	return ri
}

// describe names a request for the log as Kopf does: the method and URL.
func (c *Client) describe(method string, res resources.Resource, namespace, name, sub string) string {
	var b strings.Builder
	b.WriteString(method + " " + c.host)
	if res.Group == "" {
		b.WriteString("/api/" + res.Version)
	} else {
		b.WriteString("/apis/" + res.Group + "/" + res.Version)
	}
	if res.Namespaced && namespace != "" {
		b.WriteString("/namespaces/" + namespace)
	}
	b.WriteString("/" + res.Plural + "/" + name)
	if sub != "" {
		b.WriteString("/" + sub)
	}
	return b.String()
}

func objectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// CreateEmpty creates a cluster-scoped object with only its name, if it
// does not exist yet (the webhook configurations the operator manages, which
// it then patches): trying and tolerating a conflict needs no "get" rights.
func (c *Client) CreateEmpty(ctx context.Context, res resources.Resource, kind, name string) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": res.APIVersion(), "kind": kind, "metadata": map[string]any{"name": name},
	}}
	err := c.retry(ctx, func() string { return c.describe("POST", res, "", "", "") }, func() error {
		_, err := c.resource(res, "").Create(ctx, obj, metav1.CreateOptions{})
		return err
	})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return explain(err, "create", res, "", name)
	}
	return nil
}

// CRD reads the CustomResourceDefinition of this name (plural.group), or
// nil if there is none (a built-in or aggregated resource). It lists by
// name rather than gets: an operator that scans CRDs may list them, and
// needs no "get" for this.
func (c *Client) CRD(ctx context.Context, name string) (map[string]any, error) {
	crds := resources.Resource{Group: "apiextensions.k8s.io", Version: "v1", Plural: "customresourcedefinitions"}
	var list *unstructured.UnstructuredList
	err := c.retry(ctx, func() string { return c.describe("GET", crds, "", "", "") }, func() (err error) {
		list, err = c.resource(crds, "").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
		return err
	})
	if err != nil {
		return nil, explain(err, "list", crds, "", name)
	}
	for _, item := range list.Items {
		if item.GetName() == name {
			return item.Object, nil
		}
	}
	return nil, nil
}

// Create creates the object; an existing one fails with an error that
// apierrors.IsAlreadyExists recognises.
func (c *Client) Create(ctx context.Context, res resources.Resource, namespace string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var out *unstructured.Unstructured
	err := c.retry(ctx, func() string { return c.describe("POST", res, namespace, "", "") }, func() (err error) {
		out, err = c.resource(res, namespace).Create(ctx, obj, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, explain(err, "create", res, namespace, obj.GetName())
	}
	return out, nil
}

// Update replaces the object if its resourceVersion is still the stored
// one; otherwise it fails with an error that apierrors.IsConflict
// recognises.
func (c *Client) Update(ctx context.Context, res resources.Resource, namespace string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var out *unstructured.Unstructured
	err := c.retry(ctx, func() string { return c.describe("PUT", res, namespace, obj.GetName(), "") }, func() (err error) {
		out, err = c.resource(res, namespace).Update(ctx, obj, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return nil, explain(err, "update", res, namespace, obj.GetName())
	}
	return out, nil
}

// ErrForbidden marks requests the operator's identity is not allowed to make.
var ErrForbidden = errors.New("forbidden")

// Retry is how the operator's own requests are retried: 5xx responses and
// network errors are transient and retried after each of the backoffs in
// turn; 429 is retried by client-go itself, honouring Retry-After; other
// 4xx responses are final and surface at once. Each failed attempt is
// logged in Kopf's words ("Request attempt #1/9 failed; will retry: ..."),
// but at DEBUG where Kopf logs ERROR: an outage fails every object's
// requests, and one line per attempt per object buried the story, which
// the flow control's gate tells in two lines (unavailable, back). The
// final "escalating" line stays at ERROR, unless the gate knows the server
// is unavailable (compat: log-levels-outage).
type Retry struct {
	Backoffs []time.Duration
	Clock    clock.Clock
	// Logger gets the attempts' lines; nil logs nothing.
	Logger *slog.Logger
}

// do calls call until it succeeds, fails for good, or the backoffs are
// exhausted; what names the request in the log ("GET https://…/apis"),
// called only when a line is logged (patches pass here on the hot path).
// flow, when set, is the gate whose outage makes the escalation quiet.
func (r Retry) do(ctx context.Context, flow *flowcontrol.Gate, what func() string, call func() error) error {
	count := len(r.Backoffs) + 1
	for attempt := 0; ; attempt++ {
		idx := fmt.Sprintf("#%d/%d", attempt+1, count)
		if attempt > 0 {
			r.log(ctx, slog.LevelDebug, "Request attempt %s: %s", idx, what())
		}
		err := call()
		if err == nil {
			if attempt > 0 {
				r.log(ctx, slog.LevelDebug, "Request attempt %s succeeded: %s", idx, what())
			}
			return nil
		}
		if !flowcontrol.Transient(err) || ctx.Err() != nil {
			return err
		}
		if attempt >= len(r.Backoffs) {
			level := slog.LevelError
			if flow.Unavailable() {
				level = slog.LevelDebug
			}
			r.log(ctx, level, "Request attempt %s failed; escalating: %s -> %v", idx, what(), err)
			return err
		}
		r.log(ctx, slog.LevelDebug, "Request attempt %s failed; will retry: %s -> %v", idx, what(), err)
		clk := r.Clock
		if clk == nil {
			clk = clock.RealClock{}
		}
		t := clk.NewTimer(r.Backoffs[attempt])
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C():
		}
	}
}

func (r Retry) log(ctx context.Context, level slog.Level, format string, args ...any) {
	if r.Logger != nil && r.Logger.Enabled(ctx, level) {
		r.Logger.Log(ctx, level, fmt.Sprintf(format, args...))
	}
}

// verbPatchStatus is the verb of a status patch in messages.
const verbPatchStatus = "patch the status of"

// explain turns a failed request into an error that says what to do: a 403
// names the verb, resource and namespace the operator lacks.
func explain(err error, verb string, res resources.Resource, namespace, name string) error {
	if apierrors.IsForbidden(err) {
		where := "cluster-wide"
		if namespace != "" {
			where = "in namespace " + namespace
		}
		// The rule to grant: the verb itself, on "plural/status" for the
		// status subresource, as RBAC rules and `kopfgo rbac` spell them.
		rule, resource := verb, res.Plural
		if verb == verbPatchStatus {
			rule, resource = "patch", res.Plural+"/status"
		}
		return fmt.Errorf("%w: the operator may not %s %s %s (object %s); grant it the %q verb on %q in its RBAC: %w",
			ErrForbidden, verb, res, where, name, rule, resource+"."+res.Group, err)
	}
	return fmt.Errorf("%s %s %s: %w", verb, res, objectName(namespace, name), err)
}

// rawPatcher sends merge patches and reads back only the resourceVersion of
// the result. The dynamic client decodes every response into a whole
// unstructured object, which the operator never looks at: for the two
// patches of a handling cycle that was most of the operator's own garbage.
type rawPatcher struct {
	rest rest.Interface
}

func newRawPatcher(cfg *rest.Config) (*rawPatcher, error) {
	rc, err := newRawREST(cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot create the patching client: %w", err)
	}
	return &rawPatcher{rest: rc}, nil
}

// newRawREST builds a REST client that hands back response bodies as they
// are, always JSON. Only metav1.Status needs decoding (for API errors, which
// come out as the dynamic client's would): a scheme of its own keeps the typed
// API groups out of the operator's binary.
func newRawREST(cfg *rest.Config) (rest.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.AcceptContentTypes = "application/json"
	cfg.ContentType = "application/json"
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	// The bare JSON serializer, without a codec factory's versioning, leaves
	// the Status's kind and apiVersion in place, as the dynamic client does.
	cfg.NegotiatedSerializer = runtime.NewSimpleNegotiatedSerializer(runtime.SerializerInfo{
		MediaType: "application/json", MediaTypeType: "application", MediaTypeSubType: "json", EncodesAsText: true,
		Serializer: jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, s, s, jsonserializer.SerializerOptions{}),
	})
	cfg.GroupVersion = &schema.GroupVersion{}
	cfg.APIPath = "/"
	return rest.UnversionedRESTClientFor(cfg)
}

// resourcePath is the URL path of a resource's collection (name ""), of an
// object, or of an object's subresource.
func resourcePath(res resources.Resource, namespace, name, sub string) string {
	p := "/apis/" + res.Group + "/" + res.Version
	if res.Group == "" {
		p = "/api/" + res.Version
	}
	if res.Namespaced && namespace != "" {
		p = path.Join(p, "namespaces", namespace)
	}
	return path.Join(p, res.Plural, name, sub)
}

// metadataOnly asks the API server to answer with the patched object's
// metadata only (a PartialObjectMetadata), or with the whole object where
// that form is not served: the operator reads only the resourceVersion, and
// encoding, sending and scanning the rest cost both sides CPU for nothing.
const metadataOnly = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json"

// patch sends one merge patch (to the status subresource when sub is
// "status") and returns the resulting resourceVersion.
func (r *rawPatcher) patch(ctx context.Context, res resources.Resource, namespace, name string, data []byte, sub string) (string, error) {
	p := resourcePath(res, namespace, name, sub)
	result := r.rest.Patch(types.MergePatchType).AbsPath(p).Body(data).
		SetHeader("Accept", metadataOnly).Do(ctx)
	if err := result.Error(); err != nil {
		return "", err // Error, unlike Raw, reads the API server's Status
	}
	body, err := result.Raw()
	if err != nil {
		return "", err
	}
	var head struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return "", fmt.Errorf("cannot read the patched object: %w", err)
	}
	return head.Metadata.ResourceVersion, nil
}
