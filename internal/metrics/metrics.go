package metrics

import (
	"context"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// Outcomes of handler invocations, as the label "outcome" says them.
const (
	Success   = "success"
	Temporary = "temporary" // a kopfgo.TemporaryError: retried after its delay
	Permanent = "permanent" // a kopfgo.PermanentError: not retried
	Exception = "exception" // any other error: retried with the default backoff
)

// Options are what the metrics must know of the operator when they are made.
type Options struct {
	// Namespaced: the operator serves some namespaces, not the cluster. The
	// handler metrics have a namespace label then, whose values are bounded
	// by the namespaces served; a cluster-wide operator's would be bounded
	// by nothing but the cluster, so they have none.
	Namespaced bool
	// Version and Commit label kopfgo_build_info (internal/version's stamp).
	Version, Commit string
}

// Metrics holds an operator's metrics in a registry of its own.
type Metrics struct {
	reg        *prometheus.Registry
	namespaced bool

	invocations   *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	retries       *prometheus.CounterVec
	inFlight      prometheus.Gauge
	queueWait     prometheus.Histogram
	watchEvents   *prometheus.CounterVec
	watchRestarts *prometheus.CounterVec
	apiLatency    *prometheus.HistogramVec
	apiRequests   *prometheus.CounterVec
	events        *prometheus.CounterVec

	daemonsOnce sync.Once
	waitingOnce sync.Once
	waiting     atomic.Pointer[func() int]
	leaderOnce  sync.Once
	leader      prometheus.Gauge
	shardsOnce  sync.Once
	shards      prometheus.Gauge
	paused      prometheus.Gauge

	admissionOnce     sync.Once
	admissionRequests *prometheus.CounterVec
	admissionDuration *prometheus.HistogramVec

	flowOnce     sync.Once
	flowWaited   *prometheus.CounterVec
	flowWait     *prometheus.HistogramVec
	flowRejected *prometheus.CounterVec
}

// New makes the metrics, with the Go runtime and process collectors, and
// makes them the receiver of client-go's request metrics.
func New(o Options) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), namespaced: o.Namespaced}
	// Handler metrics are labelled by where the handler is (resource, and
	// namespace when namespaced), then by the handler itself.
	where, by := []string{"resource"}, "resource"
	if o.Namespaced {
		where, by = []string{"resource", "namespace"}, "resource, namespace"
	}
	m.invocations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kopfgo_handler_invocations_total",
		Help: "Calls of handlers, by " + by + ", handler id, cause (create, update, delete, resume, field…; event; daemon, timer) and outcome (success, temporary, permanent, exception).",
	}, slices.Concat(where, []string{"handler", "cause", "outcome"}))
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kopfgo_handler_duration_seconds",
		Help:    "How long handlers ran, by " + by + ", handler id and cause (as kopfgo_handler_invocations_total).",
		Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 60, 300},
	}, slices.Concat(where, []string{"handler", "cause"}))
	m.retries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kopfgo_handler_retries_total",
		Help: "Calls of handlers that were retries of an earlier failed call, by " + by + ", handler id and cause.",
	}, slices.Concat(where, []string{"handler", "cause"}))
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kopfgo_objects_in_flight",
		Help: "Objects being processed right now.",
	})
	m.queueWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kopfgo_queue_wait_seconds",
		Help:    "How long objects wait from their news (a watch event, a daemon's exit, a timer's touch) to the start of their pass.",
		Buckets: []float64{.0001, .001, .005, .01, .05, .1, .5, 1, 5, 10, 60},
	})
	m.watchEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kopfgo_watch_events_total",
		Help: "Watch events received, by resource and type (LISTED for the initial listing).",
	}, []string{"resource", "type"})
	m.watchRestarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kopfgo_watch_restarts_total",
		Help: "Lists or watches that failed or ended and are retried, by resource.",
	}, []string{"resource"})
	m.apiLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kopfgo_api_request_duration_seconds",
		Help:    "Latency of Kubernetes API requests, by verb.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"verb"})
	m.apiRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kopfgo_api_requests_total",
		Help: "Kubernetes API requests, by verb and HTTP status code (<error> when none came).",
	}, []string{"verb", "code"})
	m.events = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kopfgo_events_posted_total",
		Help: "Kubernetes Events posted, by result (posted, failed).",
	}, []string{"result"})
	m.paused = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kopfgo_standing_by",
		Help: "1 while the operator stands by (a peer of higher priority, a freeze, another replica's Lease), 0 while it serves.",
	})
	m.flowWaited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kopfgo_api_requests_waited_total",
		Help: "API requests that waited at the flow control's gate (for a slot, a Retry-After, or the API server's return), by class.",
	}, []string{"class"})
	m.flowWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kopfgo_api_request_wait_seconds",
		Help:    "How long API requests that waited at the flow control's gate waited, by class.",
		Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 10, 60, 300},
	}, []string{"class"})
	m.flowRejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kopfgo_api_requests_rejected_total",
		Help: "API requests the API server answered with 429 or 5xx, by class and code.",
	}, []string{"class", "code"})
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kopfgo_build_info",
		Help: "Always 1: the operator's build, by version, commit (empty if unknown) and goversion (the Go release it was built with).",
		ConstLabels: prometheus.Labels{
			"version": o.Version, "commit": o.Commit, "goversion": runtime.Version(),
		},
	})
	build.Set(1)
	m.reg.MustRegister(m.invocations, m.duration, m.retries, m.inFlight, m.queueWait, m.watchEvents, m.watchRestarts,
		m.apiLatency, m.apiRequests, m.events, m.paused, m.flowWaited, m.flowWait, m.flowRejected, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	current.Store(m)
	registerClientGo.Do(func() {
		clientmetrics.Register(clientmetrics.RegisterOpts{RequestLatency: latencyAdapter{}, RequestResult: resultAdapter{}})
	})
	return m
}

// Registry is where the metrics are, for serving or for tests.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// HTTPHandler serves the metrics in Prometheus' text format.
func (m *Metrics) HTTPHandler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Call is one call of a handler, as the metrics label it.
type Call struct {
	// Resource is the handler's resource as the logs name it
	// (kopfexamples.v1.kopf.dev); Namespace is its object's ("" for a
	// cluster-scoped one), a label only when the operator is namespaced.
	Resource, Namespace string
	Handler, Cause      string
	Outcome             string // Success, ...
	Retry               int    // the attempt's number, 0: the first
}

// HandlerCalled records one handler call and how long it ran.
func (m *Metrics) HandlerCalled(c Call, d time.Duration) {
	var buf [5]string
	lv := append(buf[:0], c.Resource)
	if m.namespaced {
		lv = append(lv, c.Namespace)
	}
	lv = append(lv, c.Handler, c.Cause)
	m.duration.WithLabelValues(lv...).Observe(d.Seconds())
	if c.Retry > 0 {
		m.retries.WithLabelValues(lv...).Inc()
	}
	m.invocations.WithLabelValues(append(lv, c.Outcome)...).Inc()
}

// Busy adds delta to the objects in flight.
func (m *Metrics) Busy(delta int) { m.inFlight.Add(float64(delta)) }

// QueueWait observes an object's wait for its pass.
func (m *Metrics) QueueWait(d time.Duration) { m.queueWait.Observe(d.Seconds()) }

// WatchEvent counts a watch event.
func (m *Metrics) WatchEvent(resource, typ string) {
	m.watchEvents.WithLabelValues(resource, typ).Inc()
}

// WatchRestart counts a retried list or watch.
func (m *Metrics) WatchRestart(resource string) { m.watchRestarts.WithLabelValues(resource).Inc() }

// EventPosted counts an Event posted or not.
func (m *Metrics) EventPosted(err error) {
	if err != nil {
		m.events.WithLabelValues("failed").Inc()
		return
	}
	m.events.WithLabelValues("posted").Inc()
}

// Paused sets kopfgo_standing_by.
func (m *Metrics) Paused(paused bool) { m.paused.Set(boolValue(paused)) }

// Leading sets kopfgo_leader, registered on the first call: only operators
// with leader election have it.
func (m *Metrics) Leading(leading bool) {
	m.leaderOnce.Do(func() {
		m.leader = prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kopfgo_leader",
			Help: "1 while this replica holds the leader election's Lease, 0 otherwise.",
		})
		m.reg.MustRegister(m.leader)
	})
	m.leader.Set(boolValue(leading))
}

// ShardsHeld sets kopfgo_shards_held, registered on the first call: only
// sharded operators have it.
func (m *Metrics) ShardsHeld(n int) {
	m.shardsOnce.Do(func() {
		m.shards = prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kopfgo_shards_held",
			Help: "How many shards' Leases this replica holds (sharding), whose objects it serves.",
		})
		m.reg.MustRegister(m.shards)
	})
	m.shards.Set(float64(n))
}

// AdmissionRequest counts a request to the admission webhook server in
// kopfgo_admission_requests_total and times it in
// kopfgo_admission_request_duration_seconds, registered on the first
// call: only operators that serve webhooks have them. webhook is the
// handler id the request's path named ("" for the root, "unknown" for
// none of them), status the HTTP status answered: 200 for every verdict,
// rejections included.
func (m *Metrics) AdmissionRequest(webhook string, status int, d time.Duration) {
	m.admissionOnce.Do(func() {
		m.admissionRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kopfgo_admission_requests_total",
			Help: "Admission reviews the webhook server answered, by webhook (the handler id in the path; \"\" for the root, \"unknown\" for no handler's) and HTTP code (200 for every verdict, rejections included).",
		}, []string{"webhook", "code"})
		m.admissionDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kopfgo_admission_request_duration_seconds",
			Help:    "How long the webhook server took to answer admission reviews, by webhook (as kopfgo_admission_requests_total).",
			Buckets: []float64{.0005, .001, .005, .01, .05, .1, .5, 1, 5, 10, 30},
		}, []string{"webhook"})
		m.reg.MustRegister(m.admissionRequests, m.admissionDuration)
	})
	m.admissionRequests.WithLabelValues(webhook, strconv.Itoa(status)).Inc()
	m.admissionDuration.WithLabelValues(webhook).Observe(d.Seconds())
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Daemons exports running() as kopfgo_daemons_running, once.
func (m *Metrics) Daemons(running func() int) {
	m.daemonsOnce.Do(func() {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "kopfgo_daemons_running",
			Help: "Daemons and timers running, across all objects.",
		}, func() float64 { return float64(running()) }))
	})
}

// Waiting exports waiting() as kopfgo_objects_waiting: the latest reactor's
// count, should the operator start its reactor again.
func (m *Metrics) Waiting(waiting func() int) {
	m.waiting.Store(&waiting)
	m.waitingOnce.Do(func() {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "kopfgo_objects_waiting",
			Help: "Objects waiting for a pass: their news came, and the passes in flight are at their limit (kopfgo_queue_wait_seconds has how long they wait).",
		}, func() float64 { return float64((*m.waiting.Load())()) }))
	})
}

// client-go has one set of metrics hooks per process, registered once: they
// forward to the latest Metrics made.
var (
	registerClientGo sync.Once
	current          atomic.Pointer[Metrics]
)

type latencyAdapter struct{}

func (latencyAdapter) Observe(_ context.Context, verb string, _ url.URL, latency time.Duration) {
	if m := current.Load(); m != nil {
		m.apiLatency.WithLabelValues(strings.ToUpper(verb)).Observe(latency.Seconds())
	}
}

type resultAdapter struct{}

func (resultAdapter) Increment(_ context.Context, code, method, _ string) {
	if m := current.Load(); m != nil {
		m.apiRequests.WithLabelValues(strings.ToUpper(method), code).Inc()
	}
}

// APIFlowClass is one class of requests at the flow control's gate.
type APIFlowClass struct {
	Class                    string // "write", "read"
	InFlight, Limit, Waiting int
}

// APIFlow exports the flow control's figures, read at each scrape, once:
// requests in flight, the current limit and the requests waiting, by
// class, and whether the API server is unavailable.
func (m *Metrics) APIFlow(read func() (classes []APIFlowClass, unavailable bool)) {
	m.flowOnce.Do(func() {
		m.reg.MustRegister(&flowCollector{read: read})
	})
}

var (
	flowInFlight = prometheus.NewDesc("kopfgo_api_requests_in_flight",
		"The operator's API requests in flight, by class (write, read; watches are not counted).", []string{"class"}, nil)
	flowLimit = prometheus.NewDesc("kopfgo_api_requests_in_flight_limit",
		"The flow control's current limit of API requests in flight, by class (1 while the API server is unavailable).", []string{"class"}, nil)
	flowWaiting = prometheus.NewDesc("kopfgo_api_requests_waiting",
		"API requests waiting at the flow control's gate now, by class.", []string{"class"}, nil)
	flowUnavailable = prometheus.NewDesc("kopfgo_api_server_unavailable",
		"1 while the flow control holds the API server unreachable or overloaded (one probe at a time), 0 otherwise.", nil, nil)
)

// flowCollector reads the gate's figures once per scrape.
type flowCollector struct {
	read func() ([]APIFlowClass, bool)
}

func (c *flowCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- flowInFlight
	ch <- flowLimit
	ch <- flowWaiting
	ch <- flowUnavailable
}

func (c *flowCollector) Collect(ch chan<- prometheus.Metric) {
	classes, unavailable := c.read()
	for _, fc := range classes {
		ch <- prometheus.MustNewConstMetric(flowInFlight, prometheus.GaugeValue, float64(fc.InFlight), fc.Class)
		ch <- prometheus.MustNewConstMetric(flowLimit, prometheus.GaugeValue, float64(fc.Limit), fc.Class)
		ch <- prometheus.MustNewConstMetric(flowWaiting, prometheus.GaugeValue, float64(fc.Waiting), fc.Class)
	}
	ch <- prometheus.MustNewConstMetric(flowUnavailable, prometheus.GaugeValue, boolValue(unavailable))
}

// APIWaited counts a request of a class that waited d at the gate.
func (m *Metrics) APIWaited(class string, d time.Duration) {
	m.flowWaited.WithLabelValues(class).Inc()
	m.flowWait.WithLabelValues(class).Observe(d.Seconds())
}

// APIRejected counts a request of a class the API server answered with a
// 429 or a 5xx.
func (m *Metrics) APIRejected(class string, code int) {
	m.flowRejected.WithLabelValues(class, strconv.Itoa(code)).Inc()
}
